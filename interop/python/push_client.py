"""Manages push-notification configs on an A2A server with the official Python SDK client
(a2a-sdk), then sends a message with a push config attached, and prints what it saw.

Usage: push_client.py BASE_URL BINDING WEBHOOK_URL   (BINDING is JSONRPC, HTTP+JSON or GRPC)

Prints one JSON object: the ids of three configs created on a task, one read back, the ids
listed in pages of two, the ids left after a delete, and the id of the task whose send carried a
push config to WEBHOOK_URL. The Rust test that runs this script checks the values and what the
webhook received.
"""

import asyncio
import json
import sys
import uuid

from google.protobuf.json_format import MessageToDict

from a2a.client import ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskPushNotificationConfig,
)


def user_message(text):
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])


def grpc_channel(url):
    """A plaintext channel to the card's gRPC interface (a URL; gRPC wants host:port)."""
    import grpc

    return grpc.aio.insecure_channel(url.split("://", 1)[-1].rstrip("/"))


async def last_task(client, request):
    events = [MessageToDict(event) async for event in client.send_message(request)]
    return events[-1]["task"]


async def main(base_url, binding, webhook_url):
    out = {}
    config = ClientConfig(
        streaming=False, supported_protocol_bindings=[binding], grpc_channel_factory=grpc_channel
    )
    async with await ClientFactory(config).create_from_url(base_url) as client:
        task_id = (await last_task(client, SendMessageRequest(message=user_message("configs"))))["id"]

        created = []
        for n in range(3):
            made = await client.create_task_push_notification_config(
                TaskPushNotificationConfig(
                    task_id=task_id,
                    id=f"py-{n}",
                    url=f"{webhook_url}/unused/{n}",
                    token=f"token-{n}",
                    authentication=AuthenticationInfo(scheme="Bearer", credentials="py-secret"),
                )
            )
            created.append(made.id)
        out["created"] = created

        got = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task_id, id="py-1")
        )
        out["got"] = MessageToDict(got)

        pages, token = [], ""
        for _ in range(5):
            page = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id, page_size=2, page_token=token)
            )
            pages.append([c.id for c in page.configs])
            token = page.next_page_token
            if not token:
                break
        out["pages"] = pages

        await client.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="py-0")
        )
        left = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task_id)
        )
        out["left"] = sorted(c.id for c in left.configs)

        pushed = SendMessageRequest(
            message=user_message("pushed"),
            configuration=SendMessageConfiguration(
                task_push_notification_config=TaskPushNotificationConfig(
                    url=f"{webhook_url}/python",
                    token="py-token",
                    authentication=AuthenticationInfo(scheme="Bearer", credentials="py-secret"),
                )
            ),
        )
        out["pushedTask"] = (await last_task(client, pushed))["id"]

    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
