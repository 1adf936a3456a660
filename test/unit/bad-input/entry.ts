// The CLI from the sources, as bin/kube-renumber.js runs it from dist/ (the corpus must not depend on a fresh build).
import { main } from '../../../src/cli/main.ts';

process.exitCode = await main(process.argv.slice(2));
