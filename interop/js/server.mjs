// An echo agent served by the official JavaScript SDK (@a2a-js/sdk), for our client's interop
// tests. Usage: node server.mjs PORT GRPC_PORT   (JSON-RPC at /jsonrpc, HTTP+JSON at /rest, gRPC
// on GRPC_PORT, which its card names as a bare target, host:port, as the SDK's samples do).
// It echoes the text of each message as an artifact; "cancel me" works until canceled. Push
// notifications are on: configs in memory, delivered by the SDK's own sender.
import { randomUUID } from "node:crypto";
import express from "express";
import * as grpc from "@grpc/grpc-js";
import {
  AgentEvent,
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
} from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { A2AService, grpcService } from "@a2a-js/sdk/server/grpc";

const port = Number(process.argv[2]);
const grpcPort = Number(process.argv[3]);
const base = `http://127.0.0.1:${port}`;
const SUBMITTED = 1, WORKING = 2, COMPLETED = 3, CANCELED = 5;

const card = {
  name: "JavaScript echo agent",
  description: "Echoes text (@a2a-js/sdk)",
  version: "1.0.0",
  supportedInterfaces: [
    { url: `${base}/jsonrpc`, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" },
    { url: `${base}/rest`, protocolBinding: "HTTP+JSON", protocolVersion: "1.0", tenant: "" },
    { url: `127.0.0.1:${grpcPort}`, protocolBinding: "GRPC", protocolVersion: "1.0", tenant: "" },
  ],
  capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [{ id: "echo", name: "Echo", description: "Echoes text", tags: ["echo"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  securitySchemes: {},
  securityRequirements: [],
  signatures: [],
};

const waiting = new Map();
const status = (state) => ({ state, message: undefined, timestamp: new Date().toISOString() });

const executor = {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    if (!ctx.task) {
      bus.publish(AgentEvent.task({ id: taskId, contextId, status: status(SUBMITTED), artifacts: [], history: [ctx.userMessage], metadata: undefined }));
    }
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(WORKING), metadata: undefined }));
    const text = ctx.userMessage.parts.map((p) => p.content?.value ?? "").join("\n");
    if (text === "cancel me") {
      await new Promise((resolve) => waiting.set(taskId, resolve));
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(CANCELED), metadata: undefined }));
      bus.finished();
      return;
    }
    bus.publish(AgentEvent.artifactUpdate({
      taskId, contextId, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: randomUUID(), name: "echo", description: "", parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }], metadata: undefined, extensions: [] },
    }));
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: status(COMPLETED), metadata: undefined }));
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    const resolve = waiting.get(taskId);
    if (resolve) {
      waiting.delete(taskId);
      resolve();
    }
  },
};

const pushConfigs = new InMemoryPushNotificationStore();
const handler = new DefaultRequestHandler(
  card,
  new InMemoryTaskStore(),
  executor,
  undefined,
  pushConfigs,
  new DefaultPushNotificationSender(pushConfigs),
);
const app = express();
app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler }));
app.use("/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.use("/rest", restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
const grpcServer = new grpc.Server();
grpcServer.addService(A2AService, grpcService({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
grpcServer.bindAsync(`127.0.0.1:${grpcPort}`, grpc.ServerCredentials.createInsecure(), (error) => {
  if (error) throw error;
  // The card (and so readiness) is served only once gRPC is listening too.
  app.listen(port, "127.0.0.1", () => console.log(`listening on ${base}`));
});
