// Types of cri-messages-used.mjs, for the test that reads it (test/runtime/cri-api-tables.test.ts).
export type Used = Record<string, string[] | { from?: string[]; fields: string[]; text?: string[] }>;
export const messages: Used;
export const containerdMessages: Used;
export const enums: Record<string, { from?: string; prefix?: string; suffix?: string }>;
