/** Small DOM helpers shared by the panel's parts. */
import { ApiError } from './api';

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = '',
  text = ''
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text) {
    node.textContent = text;
  }
  return node;
}

/** An error in words for the user: the server's message when there is one. */
export function errorText(error: unknown): string {
  if (error instanceof ApiError) {
    return error.message;
  }
  return (error as Error)?.message ?? String(error);
}
