// A Node agent with no proxy or CA settings of its own: undici's
// EnvHttpProxyAgent reads HTTP(S)_PROXY and NO_PROXY, and Node's TLS adds
// NODE_EXTRA_CA_CERTS to its roots, as `toolguard exec` sets them. It POSTs
// once and prints the answer as a JSON line.
// Usage: node env_client.js UNDICI_DIR TARGET_URL BODY
const [undiciDir, target, body] = process.argv.slice(2);
const { fetch, EnvHttpProxyAgent } = require(undiciDir);

async function main() {
  const res = await fetch(target, {
    method: 'POST',
    dispatcher: new EnvHttpProxyAgent(),
    headers: { 'content-type': 'application/json', authorization: 'Bearer k1' },
    body,
  });
  console.log(JSON.stringify({
    status: res.status,
    outcome: res.headers.get('toolguard-outcome') || '',
    replayed: res.headers.get('idempotent-replayed') || '',
    key: res.headers.get('toolguard-key') || '',
    body: await res.text(),
  }));
}

main().catch((e) => { console.error(e); process.exit(1); });
