// The testbed's node addresses: one per node, each in a range set aside for documentation or benchmarks (never
// contacted: they are written into Node and Pod objects only), enough for the 1,024 nodes the node-waves bench allows.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { contains, parseCidr, parseIP } from '../../src/net/index.ts';
import { NODE_RESOURCES, nodeFromTemplate, testbedNodeIP, type NodeTemplateFile } from '../testbed/reregister-node.ts';

const SET_ASIDE = ['192.0.2.0/24', '198.51.100.0/24', '198.18.0.0/15'].map((c) => parseCidr(c));

describe('testbedNodeIP', () => {
  it('gives 1,024 nodes distinct addresses, all in TEST-NET-1, TEST-NET-2 or 198.18.0.0/15, none a network address', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 1024; i++) {
      const ip = testbedNodeIP(i);
      assert.ok(ip, `node ${i} has an address`);
      assert.ok(!seen.has(ip), `${ip} given twice`);
      seen.add(ip);
      assert.ok(SET_ASIDE.some((c) => contains(c, parseIP(ip))), `${ip} (node ${i}) is in a set-aside range`);
      assert.ok(!['192.0.2.0', '198.51.100.0', '198.18.0.0'].includes(ip), `${ip} is a range's first address`);
    }
    assert.equal(testbedNodeIP(0), '192.0.2.1');
    assert.equal(testbedNodeIP(507), '198.51.100.254');
    assert.equal(testbedNodeIP(508), '198.18.0.1');
    assert.equal(testbedNodeIP(508 + 255), '198.18.1.0');
  });

  it('gives none past 198.19.255.254, and none for a negative or fractional index', () => {
    assert.equal(testbedNodeIP(508 + 2 ** 17 - 3), '198.19.255.254');
    assert.equal(testbedNodeIP(508 + 2 ** 17 - 2), undefined);
    assert.equal(testbedNodeIP(-1), undefined);
    assert.equal(testbedNodeIP(1.5), undefined);
  });
});

// A testbed Node registers as a kubelet's does: with its addresses, capacity and allocatable, so a Node registered
// again under its name fits pods even when kwok's heartbeat for the old Node lands on it before kwok initializes it.
describe('nodeFromTemplate', () => {
  const file = (): NodeTemplateFile => ({
    node: { apiVersion: 'v1', kind: 'Node', metadata: { name: '${NODE}', labels: { 'kubernetes.io/hostname': '${NODE}', type: 'kwok' } }, spec: {} },
    internalIPs: { 'tb-node-7': '192.0.2.8' },
    labels: { 'tb-node-7': { 'topology.kubernetes.io/zone': 'zone-1' } },
  });

  it('registers with its addresses, capacity and allocatable (kwok\'s own defaults), and no conditions', () => {
    const n = nodeFromTemplate(file(), 'tb-node-7');
    assert.equal(n.metadata.name, 'tb-node-7');
    assert.deepEqual(n.metadata.labels, { 'kubernetes.io/hostname': 'tb-node-7', type: 'kwok', 'topology.kubernetes.io/zone': 'zone-1' });
    assert.deepEqual(n.status.addresses, [{ type: 'InternalIP', address: '192.0.2.8' }, { type: 'Hostname', address: 'tb-node-7' }]);
    assert.deepEqual(n.status.capacity, { cpu: '1k', memory: '1Ti', pods: '1M' });
    assert.deepEqual(n.status.allocatable, NODE_RESOURCES);
    // kwok's node-initialize Stage plays only while Ready is not True: the conditions are kwok's to set
    assert.equal(n.status.conditions, undefined);
  });

  it('gives a node without an address capacity and allocatable too, and each Node its own copy', () => {
    const f = file();
    const a = nodeFromTemplate(f, 'tb-node-9');
    assert.equal(a.status.addresses, undefined);
    assert.deepEqual(a.status.allocatable, NODE_RESOURCES);
    a.status.allocatable.pods = '110';
    assert.equal(nodeFromTemplate(f, 'tb-node-9').status.allocatable.pods, '1M');
    assert.equal(f.node.status, undefined, 'the template is left as it was');
  });
});
