import CacheWarden

/// The per-user caches `cachewarden discover` knows, each where its tool puts it. Sources: each tool's
/// documentation of its cache folder and variable (pip, uv, Go's `os.UserCacheDir`, ccache's `CCACHE_DIR` and its
/// `~/.ccache` legacy folder, sccache, huggingface_hub's `HF_HUB_CACHE`/`HF_HOME`, npm's `cache` setting, Yarn 1's
/// `YARN_CACHE_FOLDER`, pnpm's store under `$XDG_DATA_HOME`, `CARGO_HOME`, `GRADLE_USER_HOME`), checked against the
/// real clients where Debian or PyPI has them (Tests/CacheWardenTests/Discovery).
enum KnownCaches {
    static let user: [KnownCache] = [
        KnownCache(name: "pip", client: "pip", profile: .pip) { l in
            [l.firstVariable(["PIP_CACHE_DIR"], else: l.cacheHome + "/pip")]
        },
        KnownCache(name: "uv", client: "uv", profile: .uv) { l in
            [l.firstVariable(["UV_CACHE_DIR"], else: l.cacheHome + "/uv")]
        },
        KnownCache(name: "go", client: "Go build cache", profile: .go) { l in
            // GOCACHE=off turns the cache off (a relative value is not a path, so `variable` ignores it).
            l.environment["GOCACHE"] == "off" ? [] : [l.firstVariable(["GOCACHE"], else: l.cacheHome + "/go-build")]
        },
        KnownCache(name: "ccache", client: "ccache", profile: .ccache) { l in
            // ccache 4 uses ~/.ccache when it exists (the old default), else $XDG_CACHE_HOME/ccache.
            [
                l.firstVariable(
                    ["CCACHE_DIR"],
                    else: DiscoveryPath.existingDirectory(l.inHome(".ccache")) ?? l.cacheHome + "/ccache")
            ]
        },
        KnownCache(name: "sccache", client: "sccache", profile: .sccache) { l in
            [l.firstVariable(["SCCACHE_DIR"], else: l.cacheHome + "/sccache")]
        },
        KnownCache(name: "huggingface", client: "Hugging Face hub", profile: .huggingface) { l in
            let hfHome = l.firstVariable(["HF_HOME"], else: l.cacheHome + "/huggingface")
            return [l.firstVariable(["HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"], else: hfHome + "/hub")]
        },
        KnownCache(name: "npm", client: "npm", profile: .npm) { l in
            [l.firstVariable(["npm_config_cache", "NPM_CONFIG_CACHE"], else: l.inHome(".npm")) + "/_cacache"]
        },
        KnownCache(name: "yarn", client: "Yarn", protect: [".tmp/**"]) { l in
            [l.firstVariable(["YARN_CACHE_FOLDER"], else: l.cacheHome + "/yarn")]
        },
        KnownCache(name: "pnpm", client: "pnpm store", protect: ["tmp/**"]) { l in
            [l.firstVariable(["npm_config_store_dir"], else: l.dataHome + "/pnpm/store")]
        },
        KnownCache(name: "cargo", client: "cargo registry", profile: .cargo) { l in
            [l.firstVariable(["CARGO_HOME"], else: l.inHome(".cargo")) + "/registry"]
        },
        KnownCache(name: "gradle", client: "Gradle build cache", protect: ["*.lock", "gc.properties"]) { l in
            [l.firstVariable(["GRADLE_USER_HOME"], else: l.inHome(".gradle")) + "/caches/build-cache-1"]
        },
        KnownCache(name: "bazel", client: "Bazel disk cache", profile: .bazel) { l in
            BazelRC.diskCaches(home: l.home)
        },
        // Chromium's simple cache keeps its index in `index` and `index-dir/`; an entry whose file is gone is a miss.
        KnownCache(name: "chromium", client: "Chromium", protect: ["index", "index-dir/**"]) { l in
            KnownCache.expand(l.cacheHome + "/chromium", "*/Cache/Cache_Data")
        },
        KnownCache(name: "chrome", client: "Google Chrome", protect: ["index", "index-dir/**"]) { l in
            KnownCache.expand(l.cacheHome + "/google-chrome", "*/Cache/Cache_Data")
        },
        // Firefox's cache2: `entries/` holds the data, `index` the journal it rebuilds when an entry is missing.
        KnownCache(name: "firefox", client: "Firefox", protect: ["index", "doomed/**"]) { l in
            KnownCache.expand(l.cacheHome + "/mozilla/firefox", "*/cache2")
        },
        // The freedesktop thumbnail cache: every file is regenerated from its image on demand.
        KnownCache(name: "thumbnails", client: "thumbnails") { l in [l.cacheHome + "/thumbnails"] },
    ]
}
