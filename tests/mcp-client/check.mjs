// askloop's MCP server as a client other than askloop's own code sees it: the official
// TypeScript SDK (@modelcontextprotocol/sdk, pinned in xtask) over streamable HTTP.
//
// Environment: ASKLOOP_MCP_URL (http://host:port/mcp), ASKLOOP_MCP_TOKEN (an agent token),
// ASKLOOP_MCP_NICHE (one of that agent's niches), MCP_SDK_PREFIX (the folder whose
// node_modules holds the SDK).
//
// It checks that a wrong token is refused, lists the tools, asks a question with ask_expert,
// prints "waiting" and then waits in get_answer for the answer a person gives meanwhile. Then
// it awaits a question as a task of the MCP Tasks extension (SEP-2663), whose messages this
// SDK release does not know yet, so they go through its generic `request()`: it prints
// "task-asked" (a person sends it back for research), answers the task's input request with
// tasks/update, prints "task-updated" (a person answers), reads it completed, cancels a second
// task, and asks for a task that does not exist. Each step prints one line, `<step> <json>`;
// the exit code is 0 only when every check passed.

import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.MCP_SDK_PREFIX, "check.cjs"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require(
  "@modelcontextprotocol/sdk/client/streamableHttp.js",
);
const { ResultSchema } = require("@modelcontextprotocol/sdk/types.js");

const url = new URL(process.env.ASKLOOP_MCP_URL);
const token = process.env.ASKLOOP_MCP_TOKEN;
const niche = process.env.ASKLOOP_MCP_NICHE;

function fail(message) {
  console.error(`check failed: ${message}`);
  process.exit(1);
}

function step(name, value) {
  console.log(`${name} ${JSON.stringify(value)}`);
}

async function connect(bearer) {
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  });
  const client = new Client({ name: "askloop-sdk-check", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

// A wrong token never gets as far as a session.
let refused = false;
try {
  const stranger = await connect("al_agent_not-a-token");
  await stranger.close();
} catch (err) {
  refused = true;
  step("refused", String(err && err.message).slice(0, 200));
}
if (!refused) fail("a wrong token was accepted");

const client = await connect(token);
step("server", client.getServerVersion());

const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
step("tools", names);
for (const wanted of ["ask_expert", "get_answer", "add_research", "list_questions"]) {
  if (!names.includes(wanted)) fail(`no tool ${wanted}`);
}
const ask = tools.find((t) => t.name === "ask_expert");
if (!ask.inputSchema.required?.includes("question")) fail("ask_expert's schema requires no question");

const asked = await client.callTool({
  name: "ask_expert",
  arguments: {
    niche,
    title: "Which release date?",
    question: "Early access in March, or wait for 1.0 in June?",
    context: "The publisher's page lists both dates.",
    options: [
      { id: "ea", label: "Early access" },
      { id: "full", label: "1.0" },
    ],
    urgency: "high",
    externalId: "sdk-check-1",
  },
});
step("asked", asked.structuredContent);
if (asked.isError) fail("ask_expert failed");
if (asked.structuredContent.status !== "open") fail("the new question is not open");
if (asked.structuredContent.duplicate !== false) fail("the new question is a duplicate");
const questionId = asked.structuredContent.questionId;

const again = await client.callTool({
  name: "ask_expert",
  arguments: {
    niche,
    title: "Which release date?",
    question: "Early access in March, or wait for 1.0 in June?",
    externalId: "sdk-check-1",
  },
});
step("again", again.structuredContent);
if (again.structuredContent.questionId !== questionId || again.structuredContent.duplicate !== true) {
  fail("the same externalId made another question");
}

step("waiting", { questionId });
const answered = await client.callTool(
  { name: "get_answer", arguments: { questionId, waitSeconds: 45 } },
  undefined,
  { timeout: 58_000 },
);
step("answer", answered.structuredContent);
if (answered.isError) fail("get_answer failed");
if (answered.structuredContent.status !== "answered") fail("the question was not answered");

const stranger = await client.callTool({ name: "get_answer", arguments: { questionId: 999999 } });
step("unknown", stranger.structuredContent);
if (!stranger.isError || stranger.structuredContent.code !== "NOT_FOUND") {
  fail("an unknown question was not a NOT_FOUND tool error");
}

// Ids as models often send them: a string of digits works, a word is refused clearly.
const byText = await client.callTool({ name: "get_answer", arguments: { questionId: String(questionId) } });
step("by-text", byText.structuredContent);
if (byText.isError || byText.structuredContent.questionId !== questionId) fail("a numeric string id was refused");
const byWord = await client.callTool({ name: "get_answer", arguments: { questionId: "four" } });
step("by-word", byWord.structuredContent);
if (!byWord.isError || byWord.structuredContent.code !== "BAD_USER_INPUT") fail("a word was taken as an id");

// The Tasks extension, declared per request.
const tasksMeta = {
  "io.modelcontextprotocol/clientCapabilities": {
    extensions: { "io.modelcontextprotocol/tasks": {} },
  },
};
async function raw(method, params) {
  return client.request({ method, params: { ...params, _meta: tasksMeta } }, ResultSchema, {
    timeout: 20_000,
  });
}
async function askAsTask(externalId) {
  return raw("tools/call", {
    name: "ask_expert",
    arguments: {
      niche,
      title: "Which release date, as a task?",
      question: "Early access in March, or wait for 1.0 in June?",
      options: [
        { id: "ea", label: "Early access" },
        { id: "full", label: "1.0" },
      ],
      externalId,
    },
  });
}
// Poll tasks/get until the task's status is `wanted` (at most 30 s).
async function until(taskId, wanted) {
  for (let i = 0; i < 150; i++) {
    const task = await raw("tasks/get", { taskId });
    if (task.status === wanted) return task;
    await new Promise((r) => setTimeout(r, 200));
  }
  fail(`task ${taskId} never became ${wanted}`);
}

const created = await askAsTask("sdk-task-1");
if (created.resultType !== "task" || created.status !== "working") fail(`not a task: ${JSON.stringify(created)}`);
const taskId = created.taskId;
step("task-asked", { taskId, questionId: Number(taskId.replace("question-", "")) });

const needsInput = await until(taskId, "input_required");
step("input-required", needsInput);
const keys = Object.keys(needsInput.inputRequests || {});
if (keys.length !== 1) fail("not one input request");
const inputRequest = needsInput.inputRequests[keys[0]];
if (inputRequest.method !== "elicitation/create") fail("the input request is not an elicitation");
if (!inputRequest.params.requestedSchema.properties.findings) fail("the form asks for no findings");
const updated = await raw("tasks/update", {
  taskId,
  inputResponses: {
    [keys[0]]: { action: "accept", content: { findings: "The team knows GDScript; no console port planned." } },
  },
});
step("update-ack", updated);
const working = await until(taskId, "working");
step("task-updated", { taskId, questionId: Number(taskId.replace("question-", "")), status: working.status });

const completed = await until(taskId, "completed");
step("task-completed", completed.result.structuredContent);

const second = await askAsTask("sdk-task-2");
const cancelAck = await raw("tasks/cancel", { taskId: second.taskId });
step("cancel-ack", cancelAck);
const cancelled = await until(second.taskId, "cancelled");
step("task-cancelled", { taskId: second.taskId, status: cancelled.status });

try {
  await raw("tasks/get", { taskId: "question-999999" });
  fail("an unknown task was found");
} catch (err) {
  step("unknown-task", { code: err.code, message: String(err.message).slice(0, 200) });
}

await client.close();
step("done", true);
