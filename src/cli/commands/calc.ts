import { calc } from '../../analyze/calc.ts';
import { intFlag, str } from '../common.ts';
import { ExitCode } from '../errors.ts';
import type { Command } from '../command.ts';
import { parseOutput, renderData, table } from '../output.ts';

export const calcCommand: Command = {
  name: 'calc',
  summary: 'address facts of a CIDR: network, broadcast, usable range and count, node blocks',
  usage: 'kube-renumber calc CIDR [--node-mask N] [-o table|wide|json|yaml]',
  options: { 'node-mask': { type: 'string' } },
  positionals: { min: 1, max: 1, name: 'CIDR' },
  help: `Flags:
  --node-mask N            also count the /N blocks (one per node) the CIDR holds

Example: kube-renumber calc 10.233.64.0/18 --node-mask 24   (64 nodes)`,
  async run({ values, positionals, io }) {
    const output = parseOutput(str(values, 'output'));
    const r = calc(positionals[0]!, intFlag(values, 'node-mask', 0, 128));
    if (output === 'json' || output === 'yaml') {
      io.out(renderData(r, output));
      return ExitCode.ok;
    }
    const rows: Array<[string, string | number]> = [
      ['cidr', r.cidr],
      ['network', r.network],
    ];
    if (r.netmask) rows.push(['netmask', r.netmask]);
    if (r.broadcast) rows.push(['broadcast', r.broadcast]);
    rows.push(['first usable', r.firstUsable], ['last usable', r.lastUsable], ['usable', r.usable]);
    if (output === 'wide') rows.push(['total addresses', r.total], ['family', `IPv${r.family}`]);
    if (r.nodeBlocks) {
      const b = r.nodeBlocks;
      rows.push(
        [`nodes (/${b.nodeMask} each)`, b.count],
        ['first node block', b.first],
        ['last node block', b.last],
        ['addresses per node', b.addressesPerNode],
      );
      if (output === 'wide') rows.push(['usable per node', b.usablePerNode]);
    }
    io.out(table(['field', 'value'], rows));
    return ExitCode.ok;
  },
};
