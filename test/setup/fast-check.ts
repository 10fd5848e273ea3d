import fc from 'fast-check';

// CI must answer the same for the same commit: there, the property tests that name no seed of their
// own draw from one fixed seed (FC_SEED picks another). Elsewhere each run draws a new one, and a
// failure prints the seed and path that replay it.
if (process.env.CI) fc.configureGlobal({ seed: Number(process.env.FC_SEED ?? 20_261_128) });
