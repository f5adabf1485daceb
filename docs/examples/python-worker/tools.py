"""A Locus tool worker in Python: newline-delimited JSON on stdin and stdout.

Each input line is a trigger, such as
  {"type": "tool.execute", "id": "t-1", "attempt": 1, "deadline": null, "name": "word_count", "arguments": {"text": "a b"}}
and each output line answers one with actions naming its id. The engine
starts it with createStdioTransport({ command: 'python3', args: ['tools.py'] })
from @locus/protocol.
"""
import json
import sys


def word_count(arguments):
    return {"words": len(str(arguments.get("text", "")).split())}


def flaky(arguments):
    raise RuntimeError("upstream 503")


TOOLS = {"word_count": word_count, "flaky": flaky}


def answer(trigger):
    tool = TOOLS.get(trigger.get("name"))
    if tool is None:
        return {"type": "tool.error", "id": trigger["id"], "error": "no tool " + str(trigger.get("name"))}
    try:
        return {"type": "tool.result", "id": trigger["id"], "result": tool(trigger.get("arguments") or {})}
    except RuntimeError as error:
        # Retryable: the engine retries it under the call's policy; code labels it.
        return {"type": "tool.error", "id": trigger["id"], "error": str(error), "retryable": True, "code": "provider_error"}


for line in sys.stdin:
    if line.strip():
        sys.stdout.write(json.dumps({"actions": [answer(json.loads(line))]}) + "\n")
        sys.stdout.flush()
