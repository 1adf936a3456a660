#!/usr/bin/env node
// The Node.js version is checked before anything is imported: on an older Node the dependencies fail while
// loading, with a stack trace instead of a message. Written for old Nodes too (no top-level await).
const MIN = [22, 19];
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < MIN[0] || (major === MIN[0] && minor < MIN[1])) {
  process.stderr.write(`error: kube-renumber needs Node.js >= ${MIN.join('.')} (this is v${process.versions.node}): install a newer Node.js and run it again\n`);
  process.exit(2);
}
function require_basename(p) { return p.split(/[\\/]/).pop(); }
import('../dist/cli/main.js').then(async ({ main, installCrashHandlers }) => {
  installCrashHandlers();
  // kubectl (>= 1.26) completes `kubectl renumber ...` by running kubectl_complete-renumber with the words
  const completing = /^kubectl_complete-/.test(require_basename(process.argv[1] || ''));
  process.exitCode = await main(completing ? ['__complete', ...process.argv.slice(2)] : process.argv.slice(2));
}, (e) => {
  process.stderr.write(`error: internal: cannot load kube-renumber: ${String((e && e.message) || e).split('\n')[0]} (is dist/ built? npm run build)\n`);
  process.exit(70);
});
