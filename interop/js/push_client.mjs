// Manages push-notification configs on an A2A server with the official JavaScript SDK client
// (@a2a-js/sdk), then sends a message with a push config attached, and prints what it saw.
// Usage: node push_client.mjs BASE_URL BINDING WEBHOOK_URL   (BINDING is JSONRPC, HTTP+JSON or GRPC)
// Prints one JSON object: the ids of three configs created on a task, one read back, the ids
// listed in pages of two, the ids left after a delete, and the id of the task whose send carried
// a push config to WEBHOOK_URL. The Rust test that runs this script checks them.
import { randomUUID } from "node:crypto";
import { ClientFactory, ClientFactoryOptions } from "@a2a-js/sdk/client";
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc";

const [baseUrl, binding, webhookUrl] = process.argv.slice(2);
const ROLE_USER = 1;

function request(text, configuration = undefined) {
  const message = {
    messageId: randomUUID(),
    contextId: "",
    taskId: "",
    role: ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
  return { tenant: "", message, configuration, metadata: undefined };
}

// grpc-js takes host:port, not the absolute URL a card carries (as in client.mjs).
const grpcTransports = new GrpcTransportFactory();
const grpcByUrl = {
  protocolName: grpcTransports.protocolName,
  create: (url, card) => grpcTransports.create(url.replace(/^[a-z]+:\/\//, "").replace(/\/+$/, ""), card),
};
const client = await new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [grpcByUrl],
    preferredTransports: [binding],
  }),
).createFromUrl(baseUrl);
const out = {};
const authentication = { scheme: "Bearer", credentials: "js-secret" };

const task = await client.sendMessage(request("configs"));
out.created = [];
for (let n = 0; n < 3; n++) {
  const made = await client.createTaskPushNotificationConfig({
    tenant: "", id: `js-${n}`, taskId: task.id, url: `${webhookUrl}/unused/${n}`, token: `token-${n}`, authentication,
  });
  out.created.push(made.id);
}
out.got = await client.getTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: "js-1" });

out.pages = [];
let pageToken = "";
for (let i = 0; i < 5; i++) {
  const page = await client.listTaskPushNotificationConfig({ tenant: "", taskId: task.id, pageSize: 2, pageToken });
  out.pages.push(page.configs.map((c) => c.id));
  pageToken = page.nextPageToken;
  if (!pageToken) break;
}

await client.deleteTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: "js-0" });
const left = await client.listTaskPushNotificationConfig({ tenant: "", taskId: task.id, pageSize: 0, pageToken: "" });
out.left = left.configs.map((c) => c.id).sort();

const pushed = await client.sendMessage(request("pushed", {
  acceptedOutputModes: [],
  historyLength: undefined,
  returnImmediately: false,
  taskPushNotificationConfig: { tenant: "", id: "", taskId: "", url: `${webhookUrl}/javascript`, token: "js-token", authentication },
}));
out.pushedTask = pushed.id;

console.log(JSON.stringify(out));
