use super::*;

#[test]
fn a_listing_names_its_files_includes_and_drivers() {
    let out = b"file:.git/config\0filter.lfs.clean\ngit-lfs clean\0file:.git/config\0include.path\ninc.cfg\0file:/h/.gitconfig\0includeif.onbranch:main.path\n~/b.cfg\0file:/h/.gitconfig\0user.name\nAda\0";
    let l = parse_listing(out);
    assert!(l.cacheable && l.on_branch);
    assert_eq!(l.read.filters, ["lfs"]);
    assert_eq!(l.read.name.as_deref(), Some("Ada"));
    assert_eq!(
        l.origins,
        [PathBuf::from(".git/config"), PathBuf::from("/h/.gitconfig")]
    );
    let home = Path::new("/h");
    let targets: Vec<_> = l
        .includes
        .iter()
        .filter_map(|(f, v)| include_target(&Path::new("/r").join(f), v, Some(home)))
        .collect();
    assert_eq!(
        targets,
        [PathBuf::from("/r/.git/inc.cfg"), PathBuf::from("/h/b.cfg")]
    );
}

#[test]
fn a_value_from_no_file_is_read_but_not_cached() {
    let l = parse_listing(b"command line:\0filter.x.clean\ncat\0");
    assert!(!l.cacheable);
    assert_eq!(l.read.filters, ["x"]);
}

#[test]
fn the_standard_places_follow_the_environment() {
    let env = |v: &str| match v {
        "HOME" => Some("/h".to_string()),
        "GIT_CONFIG_SYSTEM" => Some("/s".to_string()),
        _ => None,
    };
    let f = standard_files(Path::new("/r/.git"), Path::new("/r/.git"), &env);
    for want in [
        "/r/.git/config",
        "/h/.gitconfig",
        "/h/.config/git/config",
        "/s",
    ] {
        assert!(f.contains(&PathBuf::from(want)), "{want} in {f:?}");
    }
    let g = |v: &str| (v == "GIT_CONFIG_GLOBAL").then(|| "/g".to_string());
    let f = standard_files(Path::new("/r/.git"), Path::new("/r/.git"), &g);
    assert!(f.contains(&PathBuf::from("/g")) && f.contains(&PathBuf::from("/etc/gitconfig")));
}

#[test]
fn an_entry_holds_until_a_file_changes_and_never_for_a_racy_one() {
    let dir = std::env::temp_dir().join(format!("ralph-gitcfg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("config");
    std::fs::write(&cfg, "[core]\n").unwrap();
    let missing = dir.join("missing");
    let entry = |read_at_ns| CachedRead {
        git_dir: dir.clone(),
        env: vec![],
        read_at_ns,
        files: vec![FileStat::of(&cfg), FileStat::of(&missing)],
        read: ConfigRead::default(),
    };
    let later = now_ns() + 2 * RACY_NS;
    assert!(entry(later).holds(&dir, &[]));
    assert!(!entry(now_ns()).holds(&dir, &[]), "just written: racy");
    assert!(!entry(later).holds(Path::new("/other"), &[]));
    let e = entry(later);
    std::fs::write(&missing, "").unwrap();
    assert!(!e.holds(&dir, &[]), "a file that appeared");
    let e = entry(later);
    std::thread::sleep(std::time::Duration::from_millis(30));
    std::fs::write(&cfg, "[core]\n").unwrap();
    assert!(
        !e.holds(&dir, &[]),
        "same size and text, rewritten: ctime moved"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
