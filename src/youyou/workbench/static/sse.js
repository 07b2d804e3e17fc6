// @ts-check
// Server-Sent Events read from a fetch() body (EventSource can neither POST nor send the
// bearer header). Frames: `id:`, `event:`, `data:` lines ended by a blank line; lines starting
// with ':' are comments: `: keep-alive`, or a note such as `: waiting for the model 20s`.
// Chunks may split a line anywhere, even a "\r\n" pair.

/** A frame; a note (a comment such as the model-waiting one) has `note` and no event.
 * @typedef {{id: number | null, event: string, data: any, note?: string}} Frame */

export class SseParser {
  constructor() {
    this.buffer = "";
    this.reset();
  }

  reset() {
    this.id = null;
    this.event = "message";
    this.data = [];
  }

  /** Feed decoded text; returns the frames it completed, as {id, event, data}, and the notes
   * among them as {note} (keep-alives are dropped).
   * @param {string} text @returns {Frame[]} */
  push(text) {
    this.buffer += text;
    const frames = [];
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const c = this.buffer[i];
      if (c !== "\n" && c !== "\r") continue;
      if (c === "\r" && i + 1 === this.buffer.length) break; // maybe half of "\r\n": wait
      const frame = this.line(this.buffer.slice(start, i));
      if (frame) frames.push(frame);
      if (c === "\r" && this.buffer[i + 1] === "\n") i++;
      start = i + 1;
    }
    this.buffer = this.buffer.slice(start);
    return frames;
  }

  /** @param {string} line @returns {Frame | null} */
  line(line) {
    if (line === "") {
      if (this.data.length === 0) {
        this.reset();
        return null;
      }
      const frame = { id: this.id, event: this.event, data: JSON.parse(this.data.join("\n")) };
      this.reset();
      return frame;
    }
    if (line.startsWith(":")) {
      const note = line.slice(1).trim();
      return note && note !== "keep-alive" ? { id: null, event: "", data: null, note } : null;
    }
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "id") this.id = Number(value);
    else if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
    return null;
  }
}

/** The frames (and notes) of an SSE response, as they arrive.
 * @param {Response} response @returns {AsyncGenerator<Frame>} */
export async function* readEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new SseParser();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      yield* parser.push(value);
    }
  } finally {
    reader.cancel().catch(() => {}); // a consumer that stops early closes the connection
  }
}
