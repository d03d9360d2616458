// New arrivals: a run that starts waiting while the page is open is
// marked `New` (a badge, and a highlighted card) until the person has seen
// it: until it has been in view for a moment while the page is shown, or
// they focus or click it. The tab's title counts the unseen ones
// (`(3) agentd inbox`), and a polite live region says what arrived.
import { h } from "./dom";

/** How long a card is in view before it counts as seen. */
const SEEN_AFTER_MS = 1000;
/** Arrivals within this long are announced together. */
const ANNOUNCE_AFTER_MS = 500;

export class Arrivals {
  /** The live region; it belongs in the page once. */
  readonly region = h("div", { class: "visually-hidden", role: "status", "aria-live": "polite", "aria-atomic": "true" });
  private readonly unseen = new Map<HTMLElement, { timer: number | undefined; inView: boolean }>();
  private readonly observer: IntersectionObserver;
  private pending: string[] = [];
  private announceTimer: number | undefined;

  constructor(private readonly baseTitle = document.title) {
    this.observer = new IntersectionObserver(
      (entries) => {
        for (const entry of entries) {
          const state = this.unseen.get(entry.target as HTMLElement);
          if (!state) continue;
          state.inView = entry.isIntersecting;
          this.watch(entry.target as HTMLElement);
        }
      },
      // The part under the sticky header is not in view.
      { threshold: 0.3, rootMargin: "-64px 0px 0px 0px" },
    );
    document.addEventListener("visibilitychange", () => this.unseen.forEach((_, card) => this.watch(card)));
  }

  /** Marks `card` new; `what` says it in words (its question). */
  add(card: HTMLElement, what: string): void {
    if (this.unseen.has(card)) return;
    this.unseen.set(card, { timer: undefined, inView: false });
    card.classList.add("new");
    const header = card.querySelector(":scope > header");
    header?.prepend(h("span", { class: "new-badge" }, "New"));
    const seen = () => this.seen(card);
    card.addEventListener("focusin", seen, { once: true });
    card.addEventListener("pointerdown", seen, { once: true });
    this.observer.observe(card);
    this.pending.push(what);
    window.clearTimeout(this.announceTimer);
    this.announceTimer = window.setTimeout(() => this.announce(), ANNOUNCE_AFTER_MS);
    this.title();
  }

  /** The card left the page: no longer counted. */
  remove(card: HTMLElement): void {
    this.seen(card);
  }

  /** How many arrivals are not seen yet. */
  get count(): number {
    return this.unseen.size;
  }

  private watch(card: HTMLElement): void {
    const state = this.unseen.get(card);
    if (!state) return;
    const showing = state.inView && document.visibilityState === "visible";
    if (showing && state.timer === undefined) {
      state.timer = window.setTimeout(() => this.seen(card), SEEN_AFTER_MS);
    } else if (!showing && state.timer !== undefined) {
      window.clearTimeout(state.timer);
      state.timer = undefined;
    }
  }

  private seen(card: HTMLElement): void {
    const state = this.unseen.get(card);
    if (!state) return;
    window.clearTimeout(state.timer);
    this.unseen.delete(card);
    this.observer.unobserve(card);
    card.classList.remove("new");
    card.querySelector(":scope > header > .new-badge")?.remove();
    this.title();
  }

  private title(): void {
    document.title = this.unseen.size ? `(${this.unseen.size}) ${this.baseTitle}` : this.baseTitle;
  }

  private announce(): void {
    const arrived = this.pending;
    this.pending = [];
    if (!arrived.length) return;
    this.region.textContent = arrived.length === 1 ? `New: ${arrived[0]}` : `${arrived.length} new runs wait on you`;
  }
}
