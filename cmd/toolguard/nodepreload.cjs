// toolguard exec preloads this file into every Node process of the command
// (NODE_OPTIONS=--require). Node's built-in fetch ignores HTTP_PROXY and
// HTTPS_PROXY before Node 24 and 22.21, even with NODE_USE_ENV_PROXY=1. On
// such a Node this file loads undici as the program would (from its script's
// directory, then the working directory, then npm's global packages) and
// makes undici's EnvHttpProxyAgent the global dispatcher: built-in fetch
// shares undici's global dispatcher, so its calls then go through toolguard.
// When no undici can be loaded it says so in one line on stderr, once per
// toolguard exec, and leaves a mark that exec adds to its summary.
'use strict';
(function toolguardFetchProxy() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major >= 24 || (major === 22 && minor >= 21)) return; // NODE_USE_ENV_PROXY=1 covers fetch
  if (typeof fetch !== 'function') return; // no built-in fetch (Node before 18)
  const fs = require('fs');
  const path = require('path');
  const { createRequire } = require('module');

  function starts() {
    const dirs = [];
    const script = process.argv[1];
    try {
      if (script && fs.statSync(script).isFile()) dirs.push(path.dirname(path.resolve(script)));
    } catch (e) { /* not a script: node -e, the REPL */ }
    dirs.push(process.cwd());
    if (process.env.npm_config_prefix) dirs.push(path.join(process.env.npm_config_prefix, 'lib', 'node_modules'));
    const bin = path.dirname(process.execPath);
    dirs.push(path.join(bin, '..', 'lib', 'node_modules'), path.join(bin, 'node_modules'));
    return dirs;
  }

  function loadUndici() {
    for (const dir of starts()) {
      try {
        return createRequire(path.join(dir, 'toolguard-preload.js'))('undici');
      } catch (e) { /* not there: try the next place */ }
    }
    return null;
  }

  // quietly runs fn without undici's "EnvHttpProxyAgent is experimental"
  // warning, which the program did not ask for.
  function quietly(fn) {
    const emit = process.emitWarning;
    process.emitWarning = function (warning, ...rest) {
      const code = rest[0] && typeof rest[0] === 'object' ? rest[0].code : rest[1];
      if (code === 'UNDICI-EHPA') return undefined;
      return emit.call(process, warning, ...rest);
    };
    try {
      fn();
    } finally {
      process.emitWarning = emit;
    }
  }

  const undici = loadUndici();
  let reason = 'no undici package was found from ' + process.cwd();
  if (undici && typeof undici.EnvHttpProxyAgent === 'function' && typeof undici.setGlobalDispatcher === 'function') {
    try {
      quietly(() => undici.setGlobalDispatcher(new undici.EnvHttpProxyAgent()));
      return;
    } catch (e) {
      reason = "undici's EnvHttpProxyAgent failed: " + e.message;
    }
  } else if (undici) {
    reason = 'the undici found has no EnvHttpProxyAgent (undici 6.14 or later has it)';
  }
  let first = true;
  try {
    fs.closeSync(fs.openSync(path.join(__dirname, 'node-fetch-bypass'), 'wx'));
  } catch (e) {
    first = e.code !== 'EEXIST';
  }
  if (first) {
    process.stderr.write('toolguard: Node ' + process.version + "'s fetch ignores HTTPS_PROXY and " + reason +
      ': fetch calls will bypass toolguard; fix: npm install undici (toolguard exec then routes fetch through the proxy), or use Node 24+\n');
  }
})();
