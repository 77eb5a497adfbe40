/**
 * What a Temporal namespace may be called here, as Temporal Cloud's: the one rule of
 * `--namespace` (the namespace `ebsync temporal` and `ebsync dev` create) and of
 * TEMPORAL_NAMESPACE. A name outside it ('bad ns') was taken, then failed later or printed
 * hints a shell would split.
 */
const NAMESPACE_RULE = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,253}[A-Za-z0-9])?$/;

/** The rule in words, as messages say what was expected. */
export const NAMESPACE_RULE_TEXT =
  "1-255 letters, digits, '.', '_' or '-', beginning and ending with a letter or digit";

export function isNamespaceName(name: string): boolean {
  return NAMESPACE_RULE.test(name);
}
