/** A module without function exports: not a source of task functions. */
export const answer = 42;
export default { name: "nothing here" };
