// @ts-check
// What the server is configured with and the UI shows or checks before sending: the memory
// thresholds ("every 30 turns", "70 %", the 95 % hard limit), upload and text limits and the
// password rule. One source, the server's GET /ui/settings, read once before the first page
// is drawn; nothing here repeats the server's numbers.

import { api } from "./api.js";

/**
 * @typedef {{
 *   memory: {modes: string[], everyTurns: number, contextPercent: number, warnPercent: number, blockPercent: number},
 *   limits: {imageBytes: number, textBytes: number, attachments: number, skillBytes: number,
 *            promptLabelChars: number, promptContentChars: number, titleChars: number},
 *   password: {minLength: number},
 * }} UiSettings
 */

/** @type {UiSettings | null} */
let loaded = null;

/** Reads the settings (the page reloads to try again after a failure). */
export async function loadSettings() {
  const raw = await api("GET", "/ui/settings");
  const { memory, lengths, password, uploads } = raw;
  loaded = {
    memory: {
      modes: memory.modes,
      everyTurns: memory.everyNTurns,
      contextPercent: memory.contextPercent,
      // amber from the automatic compaction's threshold, red (and no sending) at the hard limit
      warnPercent: memory.contextPercent,
      blockPercent: memory.hardLimitPercent,
    },
    limits: {
      // an image travels base64-encoded inside the message body
      imageBytes: Math.floor((uploads.maxBodyBytes * 3) / 4),
      textBytes: uploads.maxMessageChars,
      attachments: uploads.maxMessageBlocks - 1, // one block is the text typed
      skillBytes: uploads.skillMaxBytes,
      promptLabelChars: lengths.promptLabelMaxChars,
      promptContentChars: lengths.promptContentMaxChars,
      titleChars: lengths.sessionTitleMaxChars,
    },
    password: { minLength: password.minLength },
  };
}

/** @returns {UiSettings} */
export function settings() {
  if (!loaded) throw new Error("settings() before loadSettings()");
  return loaded;
}
