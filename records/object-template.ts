/**
 * An object holding `names`, each null, in that order, that V8 keeps in fast mode: made by
 * JSON.parse, not by setting names one by one (an object given more than about a dozen names by
 * computed keys turns into a slow dictionary, which costs memory and time on every read).
 * Objects of many fields made in bulk start as a copy of one (`{ ...template }` copies its
 * layout too) and keep that fast layout while their values are set.
 */
export function objectTemplate(names: readonly string[]): Record<string, null> {
  return JSON.parse(
    JSON.stringify(Object.fromEntries(names.map((name) => [name, null]))),
  ) as Record<string, null>;
}
