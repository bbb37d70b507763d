//! Descriptors of the services to call: `.proto` files (`--proto`, `--import-path`) compiled in
//! process with protox, so no `protoc` is needed; failures name the file and line in one line.

use std::path::{Path, PathBuf};

use miette::Diagnostic;
use prost_reflect::DescriptorPool;
use thiserror::Error;

/// Why the descriptors could not be built from `.proto` files.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtoError {
    #[error("--proto: no .proto file given")]
    NoFiles,
    #[error("--proto {}: no such file", .0.display())]
    MissingFile(PathBuf),
    /// The path exists but is not a file protox could read as a `.proto` (a directory, a device
    /// such as `/dev/null`, a pipe): saying "no such file" there sends the user looking for a
    /// typo.
    #[error("--proto {}: {kind}, not a .proto file", path.display())]
    NotAFile { path: PathBuf, kind: NotAFile },
    #[error("--import-path {}: not a directory", .0.display())]
    MissingImportPath(PathBuf),
    /// `file:line:column: message` (or `file: message` when protox gives no place).
    #[error("--proto: {0}")]
    Compile(String),
}

/// What a `--proto` path that exists is instead of a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum NotAFile {
    #[error("a directory")]
    Directory,
    #[error("a device or other special file")]
    Special,
}

/// Why `file` cannot be compiled as a `.proto`, or `None` when it is a regular file (through
/// symlinks).
fn not_a_proto(file: &Path) -> Option<ProtoError> {
    match std::fs::metadata(file) {
        Ok(m) if m.is_file() => None,
        Ok(m) => Some(ProtoError::NotAFile {
            path: file.to_path_buf(),
            kind: if m.is_dir() {
                NotAFile::Directory
            } else {
                NotAFile::Special
            },
        }),
        Err(_) => Some(ProtoError::MissingFile(file.to_path_buf())),
    }
}

/// Compiles `files` (each found directly or under an import path; its own directory is searched
/// after the given import paths, so a lone `--proto dir/x.proto` needs no `--import-path`).
pub fn compile_protos(
    files: &[PathBuf],
    import_paths: &[PathBuf],
) -> Result<DescriptorPool, ProtoError> {
    if files.is_empty() {
        return Err(ProtoError::NoFiles);
    }
    for dir in import_paths {
        if !dir.is_dir() {
            return Err(ProtoError::MissingImportPath(dir.clone()));
        }
    }
    let mut includes: Vec<PathBuf> = import_paths.to_vec();
    for file in files {
        if let Some(e) = not_a_proto(file) {
            return Err(e);
        }
        let parent = match file.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !includes.contains(&parent) {
            includes.push(parent);
        }
    }
    let mut compiler =
        protox::Compiler::new(&includes).map_err(|e| ProtoError::Compile(one_line(&e)))?;
    compiler.include_imports(true).include_source_info(false);
    for file in files {
        compiler
            .open_file(relative_to_include(file, import_paths))
            .map_err(|e| ProtoError::Compile(one_line(&e)))?;
    }
    Ok(compiler.descriptor_pool())
}

/// A file given relative to one of the import paths is opened by that name (as `import` would),
/// so that it is not compiled twice under two names.
fn relative_to_include<'a>(file: &'a Path, import_paths: &[PathBuf]) -> &'a Path {
    import_paths
        .iter()
        .find_map(|dir| file.strip_prefix(dir).ok())
        .unwrap_or(file)
}

/// protox's error as `file:line:column: message`, its label appended when it adds something.
fn one_line(error: &protox::Error) -> String {
    let message = error.to_string();
    let place = error
        .labels()
        .and_then(|mut labels| labels.next())
        .and_then(|label| {
            let source = error.source_code()?;
            let contents = source.read_span(label.inner(), 0, 0).ok()?;
            Some((
                contents.line() + 1,
                contents.column() + 1,
                label.label().map(str::to_string),
            ))
        });
    let hint = if error.is_file_not_found() {
        "; give the directory its imports are relative to with --import-path"
    } else {
        ""
    };
    let text = match (error.file(), place) {
        (Some(file), Some((line, column, label))) => match label {
            Some(label) if !message.contains(&label) => {
                format!("{file}:{line}:{column}: {message} ({label})")
            }
            _ => format!("{file}:{line}:{column}: {message}"),
        },
        (Some(file), None) if !message.contains(file) => format!("{file}: {message}"),
        _ => message,
    };
    format!("{}{hint}", text.replace('\n', " "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn bench_proto() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/proto/bench.proto")
    }

    #[test]
    fn a_directory_or_a_device_is_named_as_such_not_as_missing() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            compile_protos(&[dir.path().to_path_buf()], &[])
                .unwrap_err()
                .to_string(),
            format!(
                "--proto {}: a directory, not a .proto file",
                dir.path().display()
            )
        );
        assert_eq!(
            compile_protos(&[PathBuf::from("/dev/null")], &[])
                .unwrap_err()
                .to_string(),
            "--proto /dev/null: a device or other special file, not a .proto file"
        );
        let gone = dir.path().join("gone.proto");
        assert_eq!(
            compile_protos(std::slice::from_ref(&gone), &[]).unwrap_err(),
            ProtoError::MissingFile(gone)
        );
    }

    #[test]
    fn the_test_servers_proto_compiles_without_protoc() {
        let pool = compile_protos(&[bench_proto()], &[]).unwrap();
        let service = pool.get_service_by_name("candor.bench.Bench").unwrap();
        assert_eq!(service.methods().count(), 4);
    }

    #[test]
    fn imports_resolve_through_import_paths_and_well_known_types() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("common")).unwrap();
        fs::write(
            dir.path().join("common/ids.proto"),
            "syntax = \"proto3\"; package common; message Id { string value = 1; }",
        )
        .unwrap();
        fs::create_dir(dir.path().join("api")).unwrap();
        fs::write(
            dir.path().join("api/users.proto"),
            "syntax = \"proto3\"; package api; import \"common/ids.proto\"; \
             import \"google/protobuf/timestamp.proto\"; \
             message GetUser { common.Id id = 1; google.protobuf.Timestamp at = 2; } \
             service Users { rpc Get(GetUser) returns (GetUser); }",
        )
        .unwrap();
        let pool = compile_protos(
            &[dir.path().join("api/users.proto")],
            &[dir.path().to_path_buf()],
        )
        .unwrap();
        assert!(pool.get_message_by_name("common.Id").is_some());
        assert!(pool.get_service_by_name("api.Users").is_some());

        let error = compile_protos(&[dir.path().join("api/users.proto")], &[])
            .unwrap_err()
            .to_string();
        assert!(error.contains("common/ids.proto"), "{error}");
        assert!(error.contains("users.proto:1:"), "{error}");
        assert!(error.ends_with("with --import-path"), "{error}");
    }

    #[test]
    fn several_protos_from_different_directories_compile_together() {
        let dir = tempfile::tempdir().unwrap();
        for (sub, package) in [("a", "alpha"), ("b", "beta")] {
            fs::create_dir(dir.path().join(sub)).unwrap();
            fs::write(
                dir.path().join(sub).join(format!("{package}.proto")),
                format!(
                    "syntax = \"proto3\"; package {package}; message M {{ int32 n = 1; }} \
                     service S {{ rpc Call(M) returns (M); }}"
                ),
            )
            .unwrap();
        }
        let files = [
            dir.path().join("a/alpha.proto"),
            dir.path().join("b/beta.proto"),
            bench_proto(),
        ];
        let pool = compile_protos(&files, &[]).unwrap();
        let mut services: Vec<String> =
            pool.services().map(|s| s.full_name().to_string()).collect();
        services.sort();
        assert_eq!(services, ["alpha.S", "beta.S", "candor.bench.Bench"]);
    }

    #[test]
    fn a_proto_that_does_not_compile_names_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("broken.proto");
        fs::write(
            &file,
            "syntax = \"proto3\";\n\nmessage A {\n  string name = 1\n}\n",
        )
        .unwrap();
        let error = compile_protos(std::slice::from_ref(&file), &[])
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("--proto: broken.proto:5:1: "), "{error}");
        assert!(!error.contains('\n'));

        fs::write(
            &file,
            "syntax = \"proto3\";\nmessage A {\n  Missing m = 1;\n}\n",
        )
        .unwrap();
        let error = compile_protos(&[file], &[]).unwrap_err().to_string();
        assert!(error.contains("broken.proto:3:"), "{error}");
        assert!(error.contains("Missing"), "{error}");
    }

    #[test]
    fn missing_files_and_directories_are_named() {
        let missing = PathBuf::from("/nonexistent/x.proto");
        assert_eq!(
            compile_protos(std::slice::from_ref(&missing), &[]).unwrap_err(),
            ProtoError::MissingFile(missing)
        );
        let dir = PathBuf::from("/nonexistent-dir");
        assert_eq!(
            compile_protos(&[bench_proto()], std::slice::from_ref(&dir)).unwrap_err(),
            ProtoError::MissingImportPath(dir)
        );
        assert_eq!(compile_protos(&[], &[]).unwrap_err(), ProtoError::NoFiles);
    }
}
