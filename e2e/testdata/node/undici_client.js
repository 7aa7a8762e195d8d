// A real undici client for the e2e tests: sends the same POST twice through
// toolguard with undici's ProxyAgent (which tunnels with CONNECT even for
// http:// URLs) and prints each answer's status and Toolguard headers as
// JSON lines. Usage: node undici_client.js UNDICI_DIR PROXY_URL TARGET_URL [CA_FILE]
const [undiciDir, proxy, target, caFile] = process.argv.slice(2);
const { ProxyAgent, request } = require(undiciDir);
const fs = require('fs');

async function main() {
  const opts = { uri: proxy };
  if (caFile) opts.requestTls = { ca: fs.readFileSync(caFile) };
  const agent = new ProxyAgent(opts);
  for (let i = 0; i < 2; i++) {
    const res = await request(target, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json', authorization: 'Bearer node' },
      body: JSON.stringify({ customer: 'node', amount: 7, trace_id: 't' + i }),
    });
    const text = await res.body.text();
    console.log(JSON.stringify({
      status: res.statusCode,
      outcome: res.headers['toolguard-outcome'] || '',
      key: res.headers['toolguard-key'] || '',
      body: text,
    }));
  }
  await agent.close();
}

main().catch((e) => { console.error(e); process.exit(1); });
