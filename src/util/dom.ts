/** Small DOM helpers shared by the panel's parts. */

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

/** An error in words for the user: the server's message when there is one (an ApiError
 * carries it as its message). */
export function errorText(error: unknown): string {
  return (error as Error)?.message ?? String(error);
}
