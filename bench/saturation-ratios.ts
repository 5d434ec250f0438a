/**
 * Issue 26's comparisons, as rows of their own: adaptive saturation against saturation 1.1
 * and against queuing off, measured in the same benchmark run (ratios of the medians), on
 * each transport. A ratio appears only when both of its rows were measured.
 */
import { stats, type Row, type Target } from "./lib.js";

interface Pair {
  id: string;
  label: string;
  numerator: string;
  denominator: string;
  target?: Target;
}

function pairs(rows: readonly Row[], nats: boolean): Pair[] {
  const out: Pair[] = [];
  const has = (id: string): boolean => rows.some((r) => r.id === id);
  for (const r of rows) {
    const m = /^W1\.n(\d+)\.log-(on|off)\.adaptive(\.nats)?$/.exec(r.id);
    if (m === null || (m[3] !== undefined) !== nats) continue;
    const base = `W1.n${m[1]}.log-${m[2]}`;
    out.push({
      id: `${base}.adaptive-vs-queuing-off`,
      label: `W1 ${m[1]} log ${m[2]}: adaptive / queuing off, tasks/s`,
      numerator: `${base}.adaptive`,
      denominator: `${base}.queuing-off`,
      ...(nats ? { target: { op: ">=", value: 0.7, text: ">= 0.7x queuing off" } as Target } : {}),
    });
    out.push({
      id: `${base}.adaptive-vs-1.1`,
      label: `W1 ${m[1]} log ${m[2]}: adaptive / saturation 1.1, tasks/s`,
      numerator: `${base}.adaptive`,
      denominator: base,
      ...(nats ? {} : { target: { op: ">=", value: 0.95, text: "no slower than 1.1 (5% noise)" } as Target }),
    });
  }
  if (has(`W8.sat-adaptive.peak${nats ? ".nats" : ""}`)) {
    out.push({ id: "W8.adaptive-vs-1.1.peak", label: "W8 peak stored bytes: adaptive / 1.1", numerator: "W8.sat-adaptive.peak", denominator: "W8.sat-1.1.peak", target: { op: "<=", value: 1.2, text: "<= 1.2x of 1.1's" } });
    out.push({ id: "W8.adaptive-vs-inf.peak", label: "W8 peak stored bytes: adaptive / queuing off", numerator: "W8.sat-adaptive.peak", denominator: "W8.sat-inf.peak" });
    out.push({ id: "W8.adaptive-vs-1.1.makespan", label: "W8 makespan: adaptive / 1.1", numerator: "W8.sat-adaptive.makespan", denominator: "W8.sat-1.1.makespan", target: { op: "<=", value: 1, text: "no worse than 1.1's" } });
  }
  for (const r of rows) {
    const m = /^(W2\.fanin\d+\.log-(?:on|off))\.adaptive(\.nats)?$/.exec(r.id);
    if (m === null || (m[2] !== undefined) !== nats) continue;
    out.push({ id: `${m[1]}.adaptive-vs-1.1`, label: `${m[1]}: adaptive / 1.1, tasks/s`, numerator: `${m[1]}.adaptive`, denominator: m[1]!, target: { op: ">=", value: 0.9, text: "unchanged or better (10% noise)" } });
  }
  for (const r of rows) {
    const m = /^(W[35]\.[a-z]+\.stealing-(?:on|off))\.adaptive(\.nats)?$/.exec(r.id);
    if (m === null || (m[2] !== undefined) !== nats) continue;
    out.push({ id: `${m[1]}.adaptive-vs-1.1`, label: `${m[1]}: adaptive / 1.1, makespan`, numerator: `${m[1]}.adaptive`, denominator: m[1]!, target: { op: "<=", value: 1.1, text: "unchanged or better (10% noise)" } });
  }
  for (const r of rows) {
    const m = /^(W4\.[a-z]+\.stealing-(?:on|off)\.makespan)\.adaptive(\.nats)?$/.exec(r.id);
    if (m === null || (m[2] !== undefined) !== nats) continue;
    out.push({ id: `${m[1]}.adaptive-vs-1.1`, label: `${m[1]}: adaptive / 1.1`, numerator: `${m[1]}.adaptive`, denominator: m[1]!, target: { op: "<=", value: 1.1, text: "unchanged or better (10% noise)" } });
  }
  const sfx = nats ? ".nats" : "";
  return out.map((p) => ({ ...p, id: p.id + sfx, numerator: p.numerator + sfx, denominator: p.denominator + sfx }));
}

export function saturationRatios(rows: readonly Row[]): Row[] {
  const median = (id: string): number | undefined => rows.find((r) => r.id === id)?.value?.median;
  const out: Row[] = [];
  for (const nats of [false, true]) {
    for (const p of pairs(rows, nats)) {
      const a = median(p.numerator);
      const b = median(p.denominator);
      if (a === undefined || b === undefined || b === 0) continue;
      out.push({
        id: p.id,
        workload: p.id.slice(0, 2),
        label: p.label + (nats ? " [NATS]" : ""),
        unit: "x",
        higherIsBetter: p.target?.op === ">=",
        value: stats([a / b], 3),
        status: "ok",
        ...(p.target ? { target: p.target } : {}),
        extra: { numerator: p.numerator, denominator: p.denominator, of_medians: [a, b] },
      });
    }
  }
  return out;
}
