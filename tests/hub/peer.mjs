// The Hub's JavaScript client against tests/hub/fake_hub.py and a cache folder:
//   node peer.mjs download ENDPOINT CACHE ORG/REPO        snapshotDownload; prints the snapshot folder
//   node peer.mjs check ENDPOINT CACHE ORG/REPO FILE      what scanCacheDir sees of the repository, and the
//                                                         path downloadFileToCacheDir gives for FILE, as JSON
import { downloadFileToCacheDir, scanCacheDir, snapshotDownload } from "@huggingface/hub";

const [mode, hubUrl, cacheDir, repo, file] = process.argv.slice(2);
console.debug = () => {};  // the client logs each download on stdout's sibling; keep stdout for answers

if (mode === "download") {
  const folder = await snapshotDownload({ repo, hubUrl, cacheDir, revision: "main" });
  console.log(folder);
} else if (mode === "check") {
  const scan = await scanCacheDir(cacheDir);
  const found = scan.repos.find((r) => r.id.name === repo);
  const revisions = found
    ? [...found.revisions].map((rev) => ({
        commit: rev.commitOid,
        refs: [...rev.refs],
        files: [...rev.files].map((f) => ({
          name: f.path.split("/snapshots/")[1].split("/").slice(1).join("/"),
          size: f.blob.size,
          blob: f.blob.path.split("/").pop(),
        })),
      }))
    : [];
  const pointer = await downloadFileToCacheDir({ repo, path: file, hubUrl, cacheDir, revision: "main" });
  console.log(JSON.stringify({ revisions, pointer }));
} else {
  console.error("usage: peer.mjs download|check ...");
  process.exit(2);
}
