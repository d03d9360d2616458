// A small helper to build elements, and ids that link labels and
// descriptions to their controls.

type Child = Node | string | null | undefined | false;
type Attr = string | number | boolean | null | undefined | ((event: Event) => void);

/** An element with attributes (`on…` are listeners; `true` is an empty
 * attribute; `false`, `null` and `undefined` leave it out) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, Attr> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (value === true) {
      element.setAttribute(name, "");
    } else if (value !== false && value !== null && value !== undefined) {
      element.setAttribute(name, String(value));
    }
  }
  element.append(...children.filter((child): child is Node | string => !!child));
  return element;
}

let next = 0;

/** A fresh id for an element, readable in the DOM. */
export function uid(prefix: string): string {
  next += 1;
  return `${prefix}-${next}`;
}

/** `value` as indented JSON. */
export function pretty(value: unknown): string {
  return JSON.stringify(value ?? {}, null, 2);
}

/** A name as words: `issue_refund` and `issueRefund` are `issue refund`. */
export function words(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_-]+/g, " ")
    .trim()
    .toLowerCase();
}

/** A name as a label: `revised_text` is `Revised text`. */
export function label(name: string): string {
  const said = words(name);
  return said ? said[0].toUpperCase() + said.slice(1) : name;
}

/** `text` cut to `max` characters, with an ellipsis when cut. */
export function clip(text: string, max = 80): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1).trimEnd()}…` : flat;
}
