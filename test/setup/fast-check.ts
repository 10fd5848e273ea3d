import fc from 'fast-check';

// CI must answer the same for the same commit: there, the property tests that name no seed of their
// own draw from one fixed seed; FC_SEED picks another, in CI or not. Elsewhere each run draws a new
// one, and a failure prints the seed and path that replay it.
const inCi = process.env.CI !== undefined && !['', 'false', '0'].includes(process.env.CI);
const seed = process.env.FC_SEED ?? (inCi ? '20261128' : undefined);
if (seed !== undefined) fc.configureGlobal({ seed: Number(seed) });
