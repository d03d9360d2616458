// Times as a person reads them: "5 min ago", "in 6 days".
import type { Timestamp } from "@bufbuild/protobuf/wkt";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

function span(ms: number): string {
  if (ms < MINUTE) return `${Math.max(1, Math.round(ms / 1000))} s`;
  if (ms < HOUR) return `${Math.round(ms / MINUTE)} min`;
  if (ms < DAY) return `${Math.round(ms / HOUR)} h`;
  const days = Math.round(ms / DAY);
  return days === 1 ? "1 day" : `${days} days`;
}

/** How long ago `date` was. */
export function ago(date: Date, now = Date.now()): string {
  const ms = now - date.getTime();
  return ms < 5_000 ? "just now" : `${span(ms)} ago`;
}

/** How long until `date`, or that it has passed. */
export function until(date: Date, now = Date.now()): string {
  const ms = date.getTime() - now;
  return ms <= 0 ? "expired" : `in ${span(ms)}`;
}

/** `date` in full, for a tooltip. */
export function full(date: Date): string {
  return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** `time` in microseconds since the epoch, the precision agentd keeps
 * (milliseconds would make a run's consecutive states look simultaneous). */
export function micros(time: Timestamp): number {
  return Number(time.seconds) * 1_000_000 + Math.floor(time.nanos / 1_000);
}
