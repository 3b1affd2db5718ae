"""An echo agent served by the official Python SDK (a2a-sdk), for our client's interop tests.

Usage: server.py PORT [GRPC_PORT] -- JSON-RPC at /, HTTP+JSON at the root, card at the
well-known path, and gRPC on GRPC_PORT when given. It echoes the text of each message as an artifact; "cancel me" works
until canceled. Push notifications are on: configs in memory, delivered by the SDK's own sender.
"""

import asyncio
import sys

import httpx
import uvicorn
from starlette.applications import Starlette

from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
)


class Echo(AgentExecutor):
    async def execute(self, context, event_queue):
        if context.current_task is None:
            await event_queue.enqueue_event(
                Task(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[context.message],
                )
            )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        text = context.get_user_input()
        await updater.start_work()
        if text == "cancel me":
            await asyncio.sleep(3600)
        await updater.add_artifact([Part(text=text)], name="echo")
        await updater.complete()

    async def cancel(self, context, event_queue):
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


async def main(port, grpc_port):
    import grpc

    from a2a.server.request_handlers import GrpcHandler
    from a2a.types import a2a_pb2_grpc

    base = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name="Python echo agent",
        description="Echoes text (a2a-sdk)",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=base, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=base, protocol_binding="HTTP+JSON", protocol_version="1.0"),
        ]
        + (
            [AgentInterface(url=f"http://127.0.0.1:{grpc_port}", protocol_binding="GRPC", protocol_version="1.0")]
            if grpc_port
            else []
        ),
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echoes text", tags=["echo"])],
    )
    push_configs = InMemoryPushNotificationConfigStore()
    handler = DefaultRequestHandler(
        agent_executor=Echo(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        push_config_store=push_configs,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(), push_configs),
    )
    routes = (
        create_agent_card_routes(card)
        + create_jsonrpc_routes(handler, rpc_url="/")
        + create_rest_routes(handler)
    )
    grpc_server = None
    if grpc_port:
        grpc_server = grpc.aio.server()
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)
        grpc_server.add_insecure_port(f"127.0.0.1:{grpc_port}")
        await grpc_server.start()
    http = uvicorn.Server(
        uvicorn.Config(Starlette(routes=routes), host="127.0.0.1", port=port, log_level="warning")
    )
    await http.serve()
    if grpc_server is not None:
        await grpc_server.stop(None)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else None))
