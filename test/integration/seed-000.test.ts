// Seed 000's Service move: kOps' default Service range 100.64.0.0/13, which collides with Tailscale, moved in place to
// 172.24.0.0/15 as the seed did; kube-dns and default/kubernetes move in place; verify; a second run rolled back.
// `npm test` runs it on the default version; `npm run test:full` on the oldest one the testbed builds (OLDEST_VERSION,
// v1.29.15), the minor the original migration ran on, where ServiceCIDR is served only as networking.k8s.io/v1alpha1
// once the MultiCIDRServiceAllocator gate and its runtime-config are on: the plan opens with that gate and the test
// plays it. Building a second control plane for one file cost `npm test` about a quarter of its cold build time
// (docs/testbed.md, Time budget), so only the full run builds it; the version matrix is `npm run matrix`'s.

import { install } from '../../src/install.ts';
import { DEFAULT_VERSION, OLDEST_VERSION } from '../testbed/build.ts';
import { fullRun } from '../testbed/background.ts';
import { serviceScenario } from '../matrix/scenarios.ts';

install();

// 8 Services (the matrix runs 20): the gate, the v1alpha1 paths and every step are the same, in less of the suite's time
serviceScenario(fullRun() ? OLDEST_VERSION : DEFAULT_VERSION, { old: '100.64.0.0/13', next: '172.24.0.0/15', second: '10.112.0.0/16', services: 8 });
