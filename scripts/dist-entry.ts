// The entry point of the single-file executable (`npm run dist`, scripts/dist.ts): what bin/kube-renumber.js
// does, without its Node.js version check (the executable carries its own Node) and without loading dist/.
// Bundled as CommonJS: a Node 24 single executable application runs CommonJS only.
import { installCrashHandlers, main } from '../src/cli/main.ts';

installCrashHandlers();
main(process.argv.slice(2)).then((code) => { process.exitCode = code; });
