// Drives an A2A server with the official JavaScript SDK client (@a2a-js/sdk) and prints what
// it saw. Usage: node client.mjs BASE_URL BINDING   (BINDING is JSONRPC, HTTP+JSON or GRPC)
import { randomUUID, randomBytes } from "node:crypto";
import { ClientFactory, ClientFactoryOptions } from "@a2a-js/sdk/client";
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc";

const [baseUrl, binding] = process.argv.slice(2);
const ROLE_USER = 1;

function message(text, extra = {}) {
  return {
    messageId: randomUUID(),
    contextId: "",
    taskId: "",
    role: ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}

function request(msg) {
  return { tenant: "", message: msg, configuration: undefined, metadata: undefined };
}

// The SDK hands the card's URL to grpc-js as its target, and grpc-js takes host:port, not the
// absolute URL the spec asks cards to carry: give it the URL's authority.
const grpcTransports = new GrpcTransportFactory();
const grpcByUrl = {
  protocolName: grpcTransports.protocolName,
  create: (url, card) => grpcTransports.create(url.replace(/^[a-z]+:\/\//, "").replace(/\/+$/, ""), card),
};
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [grpcByUrl],
    preferredTransports: [binding],
  }),
);
const client = await factory.createFromUrl(baseUrl);
const out = {};

const unary = await client.sendMessage(request(message("hello unary")));
out.unary = { id: unary.id, state: unary.status?.state, artifactText: unary.artifacts?.[0]?.parts?.[0]?.content?.value };
const fetched = await client.getTask({ tenant: "", id: unary.id, historyLength: undefined });
out.get = { id: fetched.id, state: fetched.status?.state };
const listed = await client.listTasks({ tenant: "", contextId: "", status: 0, pageSize: 10, pageToken: "", historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: undefined });
out.listed = listed.tasks.map((t) => t.id);

const key = randomBytes(32).toString("hex");
const keyed = message("hello keyed", {
  extensions: ["https://a2a-rust.com/extensions/idempotency/v1"],
  metadata: { "a2a-rust.com/idempotency-key": key },
});
const first = await client.sendMessage(request(keyed));
const second = await client.sendMessage(request(keyed));
out.keyed = [first.id, second.id];

out.stream = [];
for await (const event of client.sendMessageStream(request(message("hello stream")))) {
  const payload = event.payload;
  out.stream.push({
    kind: payload.$case,
    state: payload.value.status?.state,
    text: payload.value.artifact?.parts?.[0]?.content?.value,
  });
}

const slow = await client.sendMessage({
  ...request(message("cancel me")),
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately: true },
});
// Subscribe to the working task, cancel it once the subscription has begun, and the
// subscription ends with the cancellation.
const subscription = client.resubscribeTask({ tenant: "", id: slow.id });
out.subscribed = [];
for await (const event of subscription) {
  const payload = event.payload;
  out.subscribed.push({ kind: payload.$case, state: payload.value.status?.state });
  if (out.subscribed.length === 1) {
    const canceled = await client.cancelTask({ tenant: "", id: slow.id, metadata: undefined });
    out.canceled = canceled.status?.state;
  }
}

console.log(JSON.stringify(out));
