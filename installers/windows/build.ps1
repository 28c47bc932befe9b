# Builds Familiar for Windows: the one-folder bundle (dist\familiar\, with Familiar.exe windowed and
# familiar-cli.exe for terminals), checks it (--version, --self-test), then the installer
# dist\Familiar-<version>-setup.exe with Inno Setup 6 (https://jrsoftware.org/isinfo.php; iscc.exe on PATH or in
# its default folder).
# One command, from the repository in PowerShell:  powershell -ExecutionPolicy Bypass -File installers\windows\build.ps1
# Uses the active virtual environment, else makes build\venv. Needs Python 3.11-3.13 (the py launcher).
$ErrorActionPreference = "Stop"
Set-Location (Split-Path -Parent (Split-Path -Parent $PSScriptRoot))

if (-not $env:VIRTUAL_ENV) {
    py -3 -m venv build\venv
    . build\venv\Scripts\Activate.ps1
}
python -m pip install -q -e ".[bundle]"
if ($LASTEXITCODE) { throw "pip install failed" }
$version = (python -c "import app; print(app.__version__)").Trim()

if (Test-Path dist\familiar) { Remove-Item -Recurse -Force dist\familiar }
python -m PyInstaller --noconfirm --log-level WARN --distpath dist --workpath build\pyinstaller installers\familiar.spec
if ($LASTEXITCODE) { throw "PyInstaller failed" }

& dist\familiar\familiar-cli.exe --version
if ($LASTEXITCODE) { throw "the bundle does not start" }
& dist\familiar\familiar-cli.exe --self-test
if ($LASTEXITCODE) { throw "the bundle's self-test failed" }
$size = (Get-ChildItem -Recurse dist\familiar | Measure-Object -Sum Length).Sum / 1MB
Write-Output ("bundle: dist\familiar, {0:N0} MB" -f $size)

$iscc = (Get-Command iscc.exe -ErrorAction SilentlyContinue).Source
if (-not $iscc) { $iscc = "${env:ProgramFiles(x86)}\Inno Setup 6\ISCC.exe" }
if (-not (Test-Path $iscc)) { throw "Inno Setup 6 is not installed (iscc.exe not found): the bundle is in dist\familiar" }
& $iscc /Q "/DAppVersion=$version" installers\windows\familiar.iss
if ($LASTEXITCODE) { throw "Inno Setup failed" }
Write-Output "installer: dist\Familiar-$version-setup.exe"
