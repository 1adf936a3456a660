// The migration paths on one Kubernetes version of the matrix: KUBE_RENUMBER_MATRIX_VERSION (set by
// `npm run matrix`, test/matrix/run.ts), KUBE_RENUMBER_MATRIX_PATHS (comma-separated: service,node,calico; all by
// default). Not part of `npm test`: it is the version matrix's runner.

import { install } from '../../src/install.ts';
import { calicoScenario, nodeIpamScenario, serviceScenario } from './scenarios.ts';

install();

const version = process.env.KUBE_RENUMBER_MATRIX_VERSION;
if (!version) throw new Error('KUBE_RENUMBER_MATRIX_VERSION is not set (run it through `npm run matrix`)');
const paths = new Set((process.env.KUBE_RENUMBER_MATRIX_PATHS ?? 'service,node,calico').split(','));

// the seed-000 scenario: kOps' default ranges, which collide with Tailscale, moved to the seed's /15
if (paths.has('service')) serviceScenario(version, { old: '100.64.0.0/13', next: '172.24.0.0/15', second: '10.112.0.0/16' });
if (paths.has('node')) nodeIpamScenario(version);
if (paths.has('calico')) calicoScenario(version);
