/** The story panel: a key's life across the scheduler and workers, with the reasons and causes of each step. */
import { el, getJson, type Story } from "./api.js";

export function mountStory(parent: HTMLElement): { open(key: string): Promise<void> } {
  const close = el("button", "close", "×");
  close.title = "close";
  close.addEventListener("click", () => {
    parent.hidden = true;
  });
  const title = el("h2");
  const body = el("ol", "story-lines");
  parent.append(close, title, body);
  // Only the latest open fills the panel: an earlier story's answer that comes later is dropped.
  let latest = 0;
  return {
    async open(key) {
      const mine = ++latest;
      parent.hidden = false;
      parent.dataset.key = key;
      // data-lines says the panel shows this key's story: not until it has come.
      delete parent.dataset.lines;
      title.textContent = key;
      body.replaceChildren(el("li", "loading", "loading..."));
      try {
        const story = await getJson<Story>(`/api/story?key=${encodeURIComponent(key)}`);
        if (mine !== latest) return;
        title.textContent = `story of ${story.key}`;
        parent.dataset.key = story.key;
        body.replaceChildren(
          ...story.lines.map((line) => {
            const li = el("li", "story-line");
            li.append(el("span", "t", `+${line.t.toFixed(6)}s`), el("span", "actor", line.actor), el("span", "text", line.text));
            if (line.cause) li.append(el("div", "cause", `cause: ${line.cause}`));
            for (const reason of line.reasons ?? []) if (reason !== line.cause) li.append(el("div", "reason", reason));
            if (line.stack) li.append(el("pre", "stack", line.stack.join("\n")));
            return li;
          }),
        );
        if (story.partial) body.prepend(el("li", "partial", story.partial));
        parent.dataset.lines = String(story.lines.length);
      } catch (error) {
        if (mine !== latest) return;
        body.replaceChildren(el("li", "error", (error as Error).message));
      }
    },
  };
}
