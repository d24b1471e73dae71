/** The one chat-message type: what a caller sends, what the classifier reads and what an engine is asked. */
export const CHAT_ROLES = ['system', 'user', 'assistant'] as const;
export type ChatRole = (typeof CHAT_ROLES)[number];

export interface ChatMessage {
  role: ChatRole;
  content: string;
}

/** The turn being answered: the last user message (or the last message of any role). */
export function lastUserText(messages: readonly ChatMessage[]): string {
  return [...messages].reverse().find((m) => m.role === 'user')?.content ?? messages[messages.length - 1]?.content ?? '';
}
