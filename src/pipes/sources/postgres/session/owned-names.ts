/** The slot and publication names a pipe owns (Sluice makes and drops them). */
export function ownedNames(pipeId: string): { slot: string; publication: string } {
  const name = `pipes_${pipeId.replace(/-/g, '')}`;
  return { slot: name, publication: name };
}
