/** Tokens a chat format adds around each message (role markers and separators), at most. */
const PER_MESSAGE_OVERHEAD = 8

/**
 * An upper bound on the prompt tokens of a request, from its text alone: a
 * byte-pair tokenizer never makes more tokens than the UTF-8 bytes it reads,
 * plus a few tokens around each message. Loose (English runs about four bytes
 * a token), but never low, which is what a reservation needs.
 */
export function boundPromptTokens(messages: readonly string[]): number {
  let tokens = 0
  for (const text of messages) tokens += Buffer.byteLength(text, 'utf8') + PER_MESSAGE_OVERHEAD
  return tokens
}
