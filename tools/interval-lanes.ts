/** Intervals packed onto lanes: each takes the lowest lane free at its start (what a thread pool does). */
export function packLanes(intervals: readonly { start: number; end: number }[]): number[] {
  const order = intervals.map((_, i) => i).sort((a, b) => intervals[a]!.start - intervals[b]!.start);
  const laneEnds: number[] = [];
  const lanes = new Array<number>(intervals.length);
  for (const i of order) {
    const { start, end } = intervals[i]!;
    let lane = laneEnds.findIndex((busyUntil) => busyUntil <= start);
    if (lane < 0) lane = laneEnds.push(0) - 1;
    laneEnds[lane] = end;
    lanes[i] = lane;
  }
  return lanes;
}
