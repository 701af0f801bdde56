/** The Countersign support-chat widget. */
export declare const VERSION: string;

/** What `mount` takes. */
export interface WidgetOptions {
  /** The messages API's base URL (the platform's API URL). */
  apiUrl: string;
  /** Where the streamed post is served: a deployment's `StreamUrl` output (default
   *  `apiUrl`). */
  streamUrl?: string;
  /** `false`: the buffered post (the answer arrives whole). Default: stream. */
  stream?: boolean;
  /** Returns a fresh widget JWT minted by your backend (docs/widget-guide.md). Called at
   *  start and once more after a 401. */
  getToken: () => Promise<string>;
  /** The person's language: `en` or `pt-BR` (`pt`); the tenant's default when absent (S-4). */
  language?: "en" | "pt" | "pt-BR";
  /** Optional look. */
  theme?: { accent?: string };
  /** Where the open case's id is kept (default `localStorage`). */
  storage?: Pick<Storage, "getItem" | "setItem"> | null;
  /** A `fetch` to use (default the page's). */
  fetch?: typeof fetch;
  /** How often a visible widget checks for messages written elsewhere, in ms (default
   *  3000; S-2). */
  pollMs?: number;
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
  /** Ends the conversation without asking (a proposal still waiting is cancelled); the
   *  transcript stays shown with "Start a new conversation" below it (1.4.0; 1.3.0 and
   *  earlier opened a new one at once). The menu's "End conversation" asks first. */
  end(): Promise<void>;
  /** True once the conversation shown was ended here (1.4.0). */
  ended: boolean;
}

/** Mounts the widget in `host` (an element or a CSS selector) and starts it. */
export declare function mount(host: Element | string, options: WidgetOptions): Widget;
