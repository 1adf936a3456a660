// control-plane-load's machine-wide CPU figure: busy cores from two /proc/stat readings.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { busyCores, machineTicks } from '../../bench/control-plane-load.ts';

const stat = (user: number, nice: number, system: number, idle: number, iowait: number, irq: number, softirq: number, steal: number) =>
  `cpu  ${user} ${nice} ${system} ${idle} ${iowait} ${irq} ${softirq} ${steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1 2 3\n`;

test('machineTicks: busy counts user, nice, system, irq, softirq and steal; idle and iowait only in all', () => {
  assert.deepEqual(machineTicks(stat(100, 20, 30, 400, 50, 5, 7, 3)), { busy: 165, all: 615 });
});

test('busyCores: the share of ticks busy between two readings, times the cores', () => {
  const a = machineTicks(stat(100, 0, 0, 100, 0, 0, 0, 0));
  // 150 busy ticks of 200 on 2 cores: 1.5 cores busy
  assert.equal(busyCores(a, machineTicks(stat(220, 10, 20, 150, 0, 0, 0, 0)), 2), 1.5);
  // nothing elapsed: 0, not NaN
  assert.equal(busyCores(a, a, 2), 0);
});

test('machineTicks refuses a file without a cpu line', () => {
  assert.throws(() => machineTicks('intr 1 2 3\n'), /no cpu line/);
});

test('machineTicks reads this machine: busy never above all', () => {
  const t = machineTicks();
  assert.ok(t.all > 0 && t.busy >= 0 && t.busy <= t.all, JSON.stringify(t));
});
