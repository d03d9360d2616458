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
