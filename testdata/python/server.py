import json, sys
import helper
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m, r = msg.get("method"), None
    if m == "initialize":
        r = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "py", "version": "1"}}
    elif m == "tools/list":
        r = {"tools": [{"name": "hello", "description": helper.DESC, "inputSchema": {"type": "object"}}]}
    elif m == "tools/call":
        r = {"content": [{"type": "text", "text": "hello"}]}
    elif m == "ping":
        r = {}
    if r is None:
        out = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no such method"}}
    else:
        out = {"jsonrpc": "2.0", "id": msg["id"], "result": r}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
