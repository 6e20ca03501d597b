"""askloop's A2A server driven by the official Python SDK (a2a-sdk), a client that is not
askloop's code.

Run by tests/suite/a2a.rs with ASKLOOP_A2A_URL (askloop's origin), ASKLOOP_A2A_TOKEN (an agent
token), ASKLOOP_A2A_OTHER_TOKEN (another agent's), ASKLOOP_A2A_NICHE and ASKLOOP_A2A_PUSH_URL (a
receiver on the host of the agent's endpoint). Each step prints one
line, `<step> <json>`; on `send-back <json>` and `answer <json>` the test acts as a person (sends
the question back for research, answers it) while this script polls GetTask. Any failed check
raises, and the exit code is not 0.
"""

import asyncio
import json
import os
import sys
import time

import httpx
from google.protobuf import json_format, struct_pb2

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory, create_client
from a2a.client.errors import A2AClientError
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    GetTaskPushNotificationConfigRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError

URL = os.environ["ASKLOOP_A2A_URL"]
TOKEN = os.environ["ASKLOOP_A2A_TOKEN"]
OTHER_TOKEN = os.environ["ASKLOOP_A2A_OTHER_TOKEN"]
NICHE = os.environ["ASKLOOP_A2A_NICHE"]
PUSH_URL = os.environ["ASKLOOP_A2A_PUSH_URL"]


def say(step, value):
    print(f"{step} {json.dumps(value)}", flush=True)


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def state_name(task):
    return TaskState.Name(task.status.state)


async def client_for(token):
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return await create_client(URL, ClientConfig(httpx_client=http, streaming=False))


def question(message_id, text):
    data = json_format.ParseDict(
        {
            "niche": NICHE,
            "title": "Which date?",
            "options": [
                {"id": "ea", "label": "Early access"},
                {"id": "full", "label": "1.0"},
            ],
        },
        struct_pb2.Value(),
    )
    return SendMessageRequest(
        message=Message(
            message_id=message_id,
            role=Role.ROLE_USER,
            parts=[Part(text=text), Part(data=data)],
        )
    )


async def send(client, request):
    tasks = [event.task async for event in client.send_message(request)]
    check(len(tasks) == 1, f"one task per message, not {tasks}")
    return tasks[0]


async def until(client, task_id, wanted, seconds=60):
    deadline = time.monotonic() + seconds
    while True:
        task = await client.get_task(GetTaskRequest(id=task_id))
        if state_name(task) == wanted:
            return task
        check(time.monotonic() < deadline, f"{task_id} stayed {state_name(task)}")
        await asyncio.sleep(0.2)


async def main():
    # A wrong token is refused, for the card and before anything is asked.
    wrong_http = httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}0"})
    try:
        await create_client(URL, ClientConfig(httpx_client=wrong_http, streaming=False))
        raise AssertionError("a wrong token read the card")
    except A2AClientError as refused:
        say("card-refused", type(refused).__name__)

    client = await client_for(TOKEN)
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
    card = await A2ACardResolver(http, URL).get_agent_card()
    await http.aclose()
    wrong = ClientFactory(ClientConfig(httpx_client=wrong_http, streaming=False)).create(card)
    try:
        await send(wrong, question("m-wrong", "Refused?"))
        raise AssertionError("a wrong token was accepted")
    except A2AClientError as refused:
        say("refused", type(refused).__name__)
    await wrong_http.aclose()
    say(
        "card",
        {
            "skills": [skill.id for skill in card.skills],
            "streaming": card.capabilities.streaming,
            "binding": card.supported_interfaces[0].protocol_binding,
        },
    )

    task = await send(client, question("m-1", "Early access or 1.0?"))
    say("asked", {"taskId": task.id, "state": state_name(task)})
    check(state_name(task) == "TASK_STATE_WORKING", "a new question is WORKING")
    question_id = int(task.metadata["questionId"])

    config = await client.create_task_push_notification_config(
        TaskPushNotificationConfig(
            task_id=task.id, id="sdk-push", url=PUSH_URL, token="sdk-token"
        )
    )
    read = await client.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=task.id, id="sdk-push")
    )
    check(read == config, f"the config reads back as set: {read} != {config}")
    say("push-config", {"id": config.id, "url": config.url, "token": config.token})

    say("send-back", {"questionId": question_id})
    task = await until(client, task.id, "TASK_STATE_INPUT_REQUIRED")
    say("input-required", {"said": task.status.message.parts[0].text})

    reply = SendMessageRequest(
        message=Message(
            message_id="m-1-research",
            role=Role.ROLE_USER,
            task_id=task.id,
            parts=[Part(text="Steam shows early access on the 9th.")],
        )
    )
    replied = await send(client, reply)
    check(replied.id == task.id, "the reply continues the same task")
    say("replied", {"state": state_name(replied)})

    say("answer", {"questionId": question_id})
    done = await until(client, task.id, "TASK_STATE_COMPLETED")
    artifact = done.artifacts[0]
    data = json_format.MessageToDict(artifact.parts[1].data)
    say(
        "completed",
        {
            "artifact": artifact.name,
            "text": artifact.parts[0].text,
            "optionId": data.get("optionId"),
            "review": data.get("review"),
        },
    )

    other_task = await send(client, question("m-2", "Or should it wait for 1.0?"))
    canceled = await client.cancel_task(CancelTaskRequest(id=other_task.id))
    say("canceled", {"state": state_name(canceled)})

    listed = await client.list_tasks(ListTasksRequest(page_size=10))
    say("listed", [state_name(t) for t in listed.tasks])

    stranger = await client_for(OTHER_TOKEN)
    try:
        await stranger.get_task(GetTaskRequest(id=task.id))
        raise AssertionError("another agent read the task")
    except TaskNotFoundError as refused:
        say("foreign", type(refused).__name__)

    for open_client in (client, stranger):
        await open_client.close()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as failed:  # noqa: BLE001 - the test reads the exit code and stderr
        print(f"check failed: {failed!r}", file=sys.stderr, flush=True)
        sys.exit(1)
