// askloop's websocket as a client other than askloop's own code speaks it: the official
// graphql-transport-ws client (the npm package graphql-ws, pinned in xtask), over Node's own
// WebSocket, with keep-alive pings.
//
// Environment: ASKLOOP_WS_URL (ws://host:port/graphql/ws), ASKLOOP_TOKEN (a session token),
// ASKLOOP_NICHE (a niche the token's person is a member of), GRAPHQL_WS_PREFIX (the folder whose
// node_modules holds graphql-ws and graphql).
//
// It subscribes to the niche's queue and prints `next <json>` for the first change, and prints
// `error <json>` for a subscription the server refuses. After the first change it stops that
// subscription and waits for a line on stdin before it disposes of the client and exits; any
// unexpected close fails it. The exit code is 0 only when every check passed.

import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";

const require = createRequire(path.join(process.env.GRAPHQL_WS_PREFIX, "check.cjs"));
const { createClient } = require("graphql-ws");

function fail(message) {
  console.error(`check failed: ${message}`);
  process.exit(1);
}

let closing = false;
const client = createClient({
  url: process.env.ASKLOOP_WS_URL,
  webSocketImpl: WebSocket,
  connectionParams: { token: process.env.ASKLOOP_TOKEN },
  keepAlive: 300,
  retryAttempts: 0,
  // One connection for the whole check, opened at once and kept until disposed.
  lazy: false,
  on: {
    closed: (event) => {
      if (!closing) fail(`the socket closed: ${event.code} ${event.reason}`);
    },
  },
});

const refused = new Promise((resolve) => {
  client.subscribe(
    { query: "subscription { questionQueue(nicheSlug: \"" + process.env.ASKLOOP_NICHE + "\") { noSuchField } }" },
    {
      next: (value) => fail(`a refused subscription sent ${JSON.stringify(value)}`),
      error: (errors) => {
        console.log(`error ${JSON.stringify(errors)}`);
        resolve();
      },
      complete: () => fail("a refused subscription completed without an error"),
    },
  );
});

await refused;

const first = await new Promise((resolve) => {
  const stop = client.subscribe(
    {
      query:
        "subscription($slug: String!) { questionQueue(nicheSlug: $slug) { change question { id title } } }",
      variables: { slug: process.env.ASKLOOP_NICHE },
    },
    {
      next: (value) => {
        stop();
        resolve(value);
      },
      error: (errors) => fail(`the queue subscription failed: ${JSON.stringify(errors)}`),
      complete: () => {},
    },
  );
  console.log("subscribed {}");
});
console.log(`next ${JSON.stringify(first)}`);

const input = readline.createInterface({ input: process.stdin });
await new Promise((resolve) => input.once("line", resolve));
closing = true;
await client.dispose();
console.log("done {}");
process.exit(0);
