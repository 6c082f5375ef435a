/**
 * A runtime list of an enum's values (for a message naming them, a CLI choice, a check of a
 * value that did not come through the validator), written once and checked against the enum's
 * type both ways: the list `satisfies readonly T[]` where it is written (every entry is a value),
 * and `everyValue<T>()` refuses to compile when a value of T has no entry (naming it). So the
 * spec's enum stays the one definition: a value it gains fails the build until the list has it.
 */
export type MissingValues<T, L extends readonly unknown[]> = Exclude<T, L[number]>;

export function everyValue<T>(): <const L extends readonly T[]>(
  list: L & ([MissingValues<T, L>] extends [never] ? unknown : { missing: MissingValues<T, L> }),
) => L {
  return (list) => list;
}
