//! Fuzz targets: filled by the issue "Proof of speed and robustness".
