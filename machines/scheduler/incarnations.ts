/**
 * Worker incarnations the scheduler has removed, per worker name. A worker's id is new for
 * each process, so a registration from a removed id while another incarnation of that name
 * runs is from the past: delivered late (sent before its worker died or was replaced) or sent
 * by a process that should have stopped. Taking it would close the live incarnation and
 * put the dead one in its place, where nothing would ever run.
 *
 * A removed id with no other incarnation running is accepted (a worker the scheduler took
 * for lost comes back). At most `PER_NAME` ids are kept per name, the oldest dropped first.
 */
const PER_NAME = 64;

export class RemovedIncarnations {
  private readonly byName = new Map<string, Set<string>>();

  add(name: string, id: string): void {
    let ids = this.byName.get(name);
    if (ids === undefined) this.byName.set(name, (ids = new Set()));
    ids.delete(id);
    ids.add(id);
    if (ids.size > PER_NAME) ids.delete(ids.values().next().value as string);
  }

  has(name: string, id: string): boolean {
    return this.byName.get(name)?.has(id) ?? false;
  }
}
