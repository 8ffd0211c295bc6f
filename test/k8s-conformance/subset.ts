/** The CI subset: filled from the first full run. */
export const SUBSET: readonly string[] = [];
