/** A row a test reads back and expects to exist (`db(...).first()` may find none): the row, or the test fails naming it. */
export function existing<T>(row: T, what: string): NonNullable<T> {
  if (row === undefined || row === null) throw new Error(`no row: ${what}`);
  return row;
}
