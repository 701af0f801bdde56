/** The Countersign support-chat widget. */
export declare const VERSION: string;

/** What `mount` takes. */
export interface WidgetOptions {
  /** The messages API's base URL (the platform's API URL). */
  apiUrl: string;
  /** Returns a fresh widget JWT minted by your backend (docs/widget-guide.md). Called at
   *  start and once more after a 401. */
  getToken: () => Promise<string>;
  /** `en` (default) or `pt`. */
  language?: "en" | "pt";
  /** Optional look. */
  theme?: { accent?: string };
  /** Where the open case's id is kept (default `localStorage`). */
  storage?: Pick<Storage, "getItem" | "setItem"> | null;
  /** A `fetch` to use (default the page's). */
  fetch?: typeof fetch;
}

/** A message as the widget API returns it. */
export interface Message {
  id: string;
  role: "user" | "assistant";
  kind: "text" | "proposal" | "instructions" | "result" | "notice";
  content: string;
  instructions?: string | null;
  replyToMessageId?: string | null;
  createdAt: string;
}

/** A mounted widget. */
export interface Widget {
  /** Settles once the case is opened or restored. */
  ready: Promise<void>;
  /** The case shown. */
  caseId: string | null;
  /** What this tab has rendered, in order. */
  rendered: Message[];
  /** Sends `content` as the person, replying to the last assistant message rendered. */
  send(content: string): Promise<boolean>;
}

/** Mounts the widget in `host` (an element or a CSS selector) and starts it. */
export declare function mount(host: Element | string, options: WidgetOptions): Widget;
