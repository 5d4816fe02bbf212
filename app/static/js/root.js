/**
 * Where this server's pages live. At a site's root the paths are the server's own (`/api/runs`);
 * behind a proxy that serves paralab under a path and strips it before passing requests on
 * (jupyter-server-proxy: `/user/ada/paralab/…`, PARALAB_ROOT_PATH, docs/cluster.md) every link and
 * request the page makes must carry that path. The server writes it on <html data-root>.
 */

export const ROOT = document.documentElement.dataset.root || "";

/** A path of this server ("/api/runs") as the browser must ask for it. */
export const here = (path) => `${ROOT}${path}`;

/** The websocket address of a path of this server. */
export const socketUrl = (path) => `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}${ROOT}${path}`;
