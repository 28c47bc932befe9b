; Inno Setup script: a per-user installer for Familiar's PyInstaller bundle (dist\familiar\).
; Built by installers\windows\build.ps1, which passes the version: iscc /DAppVersion=0.1.0 installers\windows\familiar.iss
; Output: dist\Familiar-<version>-setup.exe

#ifndef AppVersion
  #define AppVersion "0.0.0"
#endif

[Setup]
AppId={{6F1D3C52-8E0B-4B7A-9C1D-5A2E7F4B9D30}
AppName=Familiar
AppVersion={#AppVersion}
AppVerName=Familiar {#AppVersion}
AppPublisher=Familiar
DefaultDirName={localappdata}\Programs\Familiar
DefaultGroupName=Familiar
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
OutputDir=..\..\dist
OutputBaseFilename=Familiar-{#AppVersion}-setup
SetupIconFile=..\..\resources\icons\familiar.ico
UninstallDisplayIcon={app}\Familiar.exe
Compression=lzma2
SolidCompression=yes
WizardStyle=modern
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "..\..\dist\familiar\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\Familiar"; Filename: "{app}\Familiar.exe"
Name: "{autodesktop}\Familiar"; Filename: "{app}\Familiar.exe"; Tasks: desktopicon

[Run]
Filename: "{app}\Familiar.exe"; Description: "{cm:LaunchProgram,Familiar}"; Flags: nowait postinstall skipifsilent
