/**
 * How LocalCluster starts its dashboard without importing it: the dashboard's server sits
 * floors above the hosts (dashboard/server/), so the package's entry point (index.ts) hands
 * LocalCluster a starter, which loads the server only when a cluster asks for it.
 */
import type { LogTap } from "../log/log-tap.js";

export interface EmbeddedDashboardOptions {
  cluster: string;
  /** Default 0: a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
}

export interface EmbeddedDashboard {
  readonly url: string;
  close(): Promise<void>;
}

/** Where the dashboard reads the records: the cluster's binary log file as it grows, or a tap on its log sink. */
export type DashboardSource = { logFile: string } | { tap: LogTap };

export type DashboardStarter = (source: DashboardSource, opts: EmbeddedDashboardOptions) => Promise<EmbeddedDashboard>;

let starter: DashboardStarter | undefined;

export function provideDashboard(start: DashboardStarter): void {
  starter = start;
}

export function dashboardStarter(): DashboardStarter | undefined {
  return starter;
}
