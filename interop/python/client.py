"""Drives an A2A server with the official Python SDK client (a2a-sdk) and prints what it saw.

Usage: client.py BASE_URL BINDING   (BINDING is JSONRPC, HTTP+JSON or GRPC)

Prints one JSON object: the unary result, the task read back and listed, the task ids of a
keyed send sent twice, the streamed events, and a working task's subscription cut short by
its cancellation. The Rust test that runs this script checks the values.
"""

import asyncio
import json
import sys
import uuid

from google.protobuf.json_format import MessageToDict

from a2a.client import ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
)

KEY_URI = "https://a2a-rust.com/extensions/idempotency/v1"
KEY_FIELD = "a2a-rust.com/idempotency-key"


def user_message(text, message_id=None):
    return Message(
        message_id=message_id or str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
    )


async def collect(client, request):
    return [MessageToDict(event) async for event in client.send_message(request)]


def grpc_channel(url):
    """A plaintext channel to the card's gRPC interface (a URL; gRPC wants host:port)."""
    import grpc

    return grpc.aio.insecure_channel(url.split("://", 1)[-1].rstrip("/"))


async def main(base_url, binding):
    out = {}
    blocking = ClientConfig(
        streaming=False, supported_protocol_bindings=[binding], grpc_channel_factory=grpc_channel
    )
    streaming = ClientConfig(
        streaming=True, supported_protocol_bindings=[binding], grpc_channel_factory=grpc_channel
    )

    async with await ClientFactory(blocking).create_from_url(base_url) as client:
        events = await collect(client, SendMessageRequest(message=user_message("hello unary")))
        out["unary"] = events
        task_id = events[-1]["task"]["id"]
        out["get"] = MessageToDict(await client.get_task(GetTaskRequest(id=task_id)))
        listed = await client.list_tasks(ListTasksRequest())
        out["listed"] = [task.id for task in listed.tasks]

        keyed = user_message("hello keyed")
        keyed.extensions.append(KEY_URI)
        keyed.metadata.update({KEY_FIELD: uuid.uuid4().hex + uuid.uuid4().hex})
        request = SendMessageRequest(
            message=keyed,
            configuration=SendMessageConfiguration(return_immediately=False),
        )
        first = await collect(client, request)
        second = await collect(client, request)
        out["keyed"] = [first[-1]["task"]["id"], second[-1]["task"]["id"]]

    async with await ClientFactory(streaming).create_from_url(base_url) as client:
        out["stream"] = await collect(client, SendMessageRequest(message=user_message("hello stream")))

        # A task that works until canceled: subscribe to it, cancel it, and the subscription
        # ends with the cancellation.
        working = SendMessageRequest(
            message=user_message("cancel me"),
            configuration=SendMessageConfiguration(return_immediately=True),
        )
        async with await ClientFactory(blocking).create_from_url(base_url) as unary:
            started = await collect(unary, working)
            task_id = started[-1]["task"]["id"]
            subscribed = []
            async for event in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                subscribed.append(MessageToDict(event))
                if len(subscribed) == 1:
                    canceled = await unary.cancel_task(CancelTaskRequest(id=task_id))
                    out["canceled"] = MessageToDict(canceled)["status"]["state"]
            out["subscribed"] = subscribed

    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
