// dump_tools.js lists the tools of a stdio MCP server and prints
// {"server", "version", "tools": [{"name", "inputSchema"}]} on one line.
// The schema tests run it at test time on the npm reference servers that
// `make deps` installs into testdata/interop (reference_servers_test.go),
// so that their schemas are read from the servers and never copied here.
//
// Usage: node dump_tools.js LABEL VERSION COMMAND [ARG...]
const { spawn } = require('child_process');

const [, , label, version, ...argv] = process.argv;
const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
const pending = new Map();
let buf = '';
let id = 0;

function send(method, params, notify) {
  const msg = { jsonrpc: '2.0', method, params };
  if (!notify) msg.id = ++id;
  child.stdin.write(JSON.stringify(msg) + '\n');
  if (!notify) return new Promise((resolve) => pending.set(msg.id, resolve));
}

child.stdout.on('data', (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    if (!line.trim()) continue;
    const m = JSON.parse(line);
    if (m.id && pending.has(m.id)) {
      pending.get(m.id)(m);
      pending.delete(m.id);
    }
  }
});

(async () => {
  await send('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'dump_tools', version: '0' } });
  send('notifications/initialized', {}, true);
  const tools = [];
  let cursor;
  do {
    const r = await send('tools/list', cursor ? { cursor } : {});
    for (const t of r.result.tools) tools.push({ name: t.name, inputSchema: t.inputSchema });
    cursor = r.result.nextCursor;
  } while (cursor);
  process.stdout.write(JSON.stringify({ server: label, version, tools }) + '\n');
  child.kill();
  process.exit(0);
})();
